"""The pipeline's steps after ingest: dbt runs (and the code hash behind run fingerprints), the one
lock on a database, publishing a validated build to the serving file, holding back failing runs."""
