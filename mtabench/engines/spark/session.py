"""A local SparkSession that stays on loopback.

Spark binds the driver to the first non-loopback interface and serves a web UI unless
told otherwise; both are turned off here. `escapedStringLiterals` makes Spark read
string literals raw (no backslash processing), as DuckDB does, so one regex literal
such as '\\S+' means the same thing on both engines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Shared with the dbt profile (dbt_project/profiles.yml, target `spark`): same values.
LOOPBACK_CONF: dict[str, str] = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.parser.escapedStringLiterals": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.catalogImplementation": "in-memory",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.ansi.enabled": "false",
    # DuckDB writes TIMESTAMP as not-UTC-adjusted Parquet; read it as TIMESTAMP, not _NTZ
    "spark.sql.parquet.inferTimestampNTZ.enabled": "false",
    # run_key partitions are strings even when they look like numbers or dates
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
}


def session_conf(warehouse: Path | None = None) -> dict[str, str]:
    conf = dict(LOOPBACK_CONF)
    if warehouse is not None:
        conf["spark.sql.warehouse.dir"] = str(warehouse)
    conf["spark.driver.memory"] = os.environ.get("MTABENCH_SPARK_DRIVER_MEMORY", "2g")
    return conf


def local_session(warehouse: Path | None = None, master: str | None = None) -> SparkSession:
    """The process-wide session (dbt's session method reuses it when run in-process)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", os.environ.get("PYSPARK_PYTHON", "python"))
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master or os.environ.get("MTABENCH_SPARK_MASTER", "local[*]"))
    builder = builder.appName("mtabench")
    for k, v in session_conf(warehouse).items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
