"""mtabench past ingest: the command line (cli), the pipeline's steps (pipeline), ministat
(stats), the Spark engine (engines), the Airflow glue (airflow), recording runs (record), and
where things live (paths), which all of them read."""
