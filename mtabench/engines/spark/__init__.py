"""The build on Spark: a session on loopback (or the driver's address a cluster reaches), the
maillog parse as a mapInArrow function (its executors import maillog_udf by name), and the
Parquet-landing build step."""
