"""The build on Spark: a loopback-only local session, the maillog parse as a mapInArrow
function (its executors import maillog_udf by name), and the Parquet-landing build step."""
