"""The pipeline's build step on Spark: Parquet landing in, marts as a DuckDB file out.

The DuckDB landing stays the ledger (hashes, line accounting, idempotent re-ingest);
it is exported as the Parquet landing that dbt's `spark` target reads through the
on-run-start hook. Spark writes the marts as Parquet in its warehouse; they are
gathered, with the raw tables the dashboards and the landing suite use, into one
DuckDB file that is validated and published exactly like the DuckDB engine's result,
so dashboards and ad-hoc SQL do not care which engine built it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb

from ingest.parquet_landing import export_landing, landing_tables
from mtabench.dbt import run_dbt
from mtabench.paths import Paths

MART_SCHEMA = "main"


def export(paths: Paths, progress: Callable[[str], None] = print) -> Path:
    with duckdb.connect(str(paths.db), read_only=True) as con:
        rep = export_landing(con, paths.landing_dir)
    progress(
        f"  parquet landing {paths.landing_dir}: {rep.partitions_written} partition(s) written, "
        f"{rep.partitions_kept} unchanged, {rep.partitions_removed} removed"
    )
    return paths.landing_dir


def build(paths: Paths, progress: Callable[[str], None] = print) -> Path:
    """dbt build on Spark over the Parquet landing; returns the DuckDB file of its marts."""
    landing = export(paths, progress)
    warehouse = paths.spark_dir / "warehouse"
    # the in-memory catalog forgets tables between runs, so their folders must go too
    shutil.rmtree(warehouse, ignore_errors=True)
    warehouse.mkdir(parents=True)
    run_dbt(paths, ["build", "--vars", json.dumps({"landing_path": str(landing)})], progress, target="spark")
    return gather(paths, warehouse / f"{MART_SCHEMA}.db", landing)


def spark_db(paths: Paths) -> Path:
    return paths.spark_dir / "mtabench.duckdb"


def gather(paths: Paths, marts_dir: Path, landing: Path) -> Path:
    """Marts (Spark's Parquet) and raw tables (the Parquet landing) into one DuckDB file."""
    out = spark_db(paths)
    tmp = out.with_suffix(".building")
    tmp.unlink(missing_ok=True)
    with duckdb.connect(str(paths.db), read_only=True) as src:
        columns = {t: [r[0] for r in src.execute(f"describe raw.{t}").fetchall()] for t in landing_tables()}
    with duckdb.connect(str(tmp)) as con:
        con.execute("create schema raw")
        for table, cols in columns.items():
            col_list = ", ".join(f'"{c}"' for c in cols)  # the landing's column order
            con.execute(
                f"create table raw.{table} as select {col_list} from read_parquet("
                f"'{landing / table}/*/*.parquet', hive_partitioning = true, hive_types_autocast = false)"
            )
        for mart in sorted(p.name for p in marts_dir.iterdir() if p.is_dir()):
            files = f"{marts_dir / mart}/*.parquet"
            con.execute(f"create table {MART_SCHEMA}.{mart} as select * from read_parquet('{files}')")
    tmp.replace(out)
    return out
