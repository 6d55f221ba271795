"""ministat's statistics, exact to the Debian binary: its arithmetic once, as SQL (dbt_project/macros/
ministat.sql), for `mtabench compare`, the comparisons mart and the serving file's compare_runs()."""
