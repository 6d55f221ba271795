"""A SparkSession that stays on loopback unless told otherwise.

Spark binds the driver to the first non-loopback interface and serves a web UI unless
told otherwise; here the driver binds to 127.0.0.1 (or MTABENCH_SPARK_DRIVER_HOST, an
address of this machine that a cluster's workers on other hosts reach) and the UI is off.
`escapedStringLiterals` makes Spark read string literals raw (no backslash processing), as
DuckDB does, so one regex literal such as '\\S+' means the same thing on both engines.

On a cluster (a master other than `local[...]`) the executors' Python is the packed
environment (pack.py), shipped with the application: a worker needs Java and Spark, none of
the driver's paths.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# Shared with the dbt profile (dbt_project/profiles.yml, target `spark`): same values.
LOOPBACK_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.parser.escapedStringLiterals": "true",
    "spark.sql.session.timeZone": "UTC",
    # the parse's session keeps no catalog (dbt's has the persistent one: delta_conf)
    "spark.sql.catalogImplementation": "in-memory",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.ansi.enabled": "false",
    # DuckDB writes TIMESTAMP as not-UTC-adjusted Parquet; read it as TIMESTAMP, not _NTZ
    "spark.sql.parquet.inferTimestampNTZ.enabled": "false",
    # run_key partitions are strings even when they look like numbers or dates
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
}


DRIVER_HOST = "MTABENCH_SPARK_DRIVER_HOST"

# Delta Lake 4.4 is built for Spark 4.2 (why pyspark is pinned to 4.2); its jars come from Maven
# through Ivy, as hadoop-aws does, and spark.jars.packages also ships them to a cluster's executors.
DELTA_PACKAGE = "io.delta:delta-spark_2.13:4.4.0"
# pyspark bundles Hadoop 3.5; Delta's kernel asks for 3.4's client jars, which would only shadow nothing
DELTA_EXCLUDES = "org.apache.hadoop:hadoop-client-api,org.apache.hadoop:hadoop-client-runtime"


def delta_conf(folder: Path) -> dict[str, str]:
    """dbt's session: the marts as Delta tables in a catalog that outlives the run, Spark's
    Hive metastore on embedded Derby in `folder` (the driver's disk, whatever the storage
    root). Derby admits one JVM at a time: only dbt's session opens it."""
    from mtabench.engines.spark.storage import cache_dir

    return {
        "spark.jars.packages": DELTA_PACKAGE,
        "spark.jars.excludes": DELTA_EXCLUDES,
        "spark.jars.ivy": str(cache_dir() / "ivy"),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.catalogImplementation": "hive",
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={folder / METASTORE};create=true"
        ),
        # derby.log beside the metastore, not in whatever folder dbt was started from
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={folder}",
        # the log of a mart is a few commits: its state in a few tasks, not Delta's 50
        "spark.databricks.delta.snapshotPartitions": "2",
        # every file a table's current version lists is live (gather reads the list as is)
        "spark.databricks.delta.properties.defaults.enableDeletionVectors": "false",
    }


METASTORE = "metastore_db"


def driver_host() -> str:
    """The address the driver listens on and executors connect back to: 127.0.0.1 (workers
    on this machine only) unless MTABENCH_SPARK_DRIVER_HOST names another address of it."""
    return os.environ.get(DRIVER_HOST) or "127.0.0.1"


def session_conf(warehouse: Path | None = None) -> dict[str, str]:
    host = driver_host()
    conf = {**LOOPBACK_CONF, "spark.driver.bindAddress": host, "spark.driver.host": host}
    if warehouse is not None:
        conf["spark.sql.warehouse.dir"] = str(warehouse)
    conf["spark.driver.memory"] = os.environ.get("MTABENCH_SPARK_DRIVER_MEMORY", "2g")
    return conf


def cluster_conf(master: str) -> dict[str, str]:
    """Settings of a cluster's executors that SQL alone needs (dbt's session takes these too);
    none on `local[...]`, where the executors are the driver's threads."""
    if master.startswith("local"):
        return {}
    conf = {
        "spark.executor.memory": os.environ.get("MTABENCH_SPARK_EXECUTOR_MEMORY", "1g"),
        "spark.executor.cores": os.environ.get("MTABENCH_SPARK_EXECUTOR_CORES", "1"),
        # executors on one address (containers, one machine) need not share a disk: fetch
        # shuffle blocks through their block manager, never by another executor's file path
        "spark.shuffle.readHostLocalDisk": "false",
    }
    if cores_max := os.environ.get("MTABENCH_SPARK_CORES_MAX"):
        conf["spark.cores.max"] = cores_max
    return conf


def executor_conf(master: str) -> dict[str, str]:
    """cluster_conf and the executors' Python: the packed environment, built or reused here
    (Python tasks: the maillog parse)."""
    if master.startswith("local"):
        return {}
    from mtabench.engines.spark.pack import ENV_DIR, EXECUTOR_PYTHON, ensure_pack

    return {
        **cluster_conf(master),
        "spark.archives": f"{ensure_pack()}#{ENV_DIR}",
        "spark.pyspark.python": EXECUTOR_PYTHON,
        "spark.executorEnv.PYSPARK_PYTHON": EXECUTOR_PYTHON,
        "spark.pyspark.driver.python": sys.executable,
    }


def local_session(warehouse: Path | None = None, master: str | None = None) -> SparkSession:
    """The process-wide session (dbt's session method reuses it when run in-process)."""
    os.environ.setdefault("SPARK_LOCAL_IP", driver_host())
    # a local master's Python workers run here: the driver's own interpreter (its venv), not the
    # first `python` on PATH (a cluster's get the packed one: executor_conf)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    master = master or os.environ.get("MTABENCH_SPARK_MASTER", "local[*]")
    executors = executor_conf(master)
    builder = SparkSession.builder.master(master).appName("mtabench")
    for k, v in {**session_conf(warehouse), **executors}.items():
        builder = builder.config(k, v)
    with _executor_python(executors.get("spark.pyspark.python")):
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def _executor_python(python: str | None) -> Iterator[None]:
    """PySpark takes the executors' Python from `PYSPARK_PYTHON` as the context starts (and
    sends it with every Python function); the driver's own environment is left as it was."""
    if python is None:
        yield
        return
    before = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = python
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYSPARK_PYTHON", None)
        else:
            os.environ["PYSPARK_PYTHON"] = before
