"""Airflow glue for the DAGs in dags/: task logic calling the data venv's CLI, the inbox watcher and
the dbt sensors' triggers (imported by class path by the triggerer), and the services driven over REST."""
