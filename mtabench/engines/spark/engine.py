"""The pipeline's build step on Spark: Parquet landing in, marts as a DuckDB file out.

The DuckDB landing stays the ledger (hashes, line accounting, idempotent re-ingest); it
is exported as the Parquet landing that dbt's `spark` target reads through the
on-run-start hook. The maillog table of that landing is Spark's own parse of the staged
lines (parse_maillogs), checked file by file against the ledger. Spark writes the marts
as Parquet in its warehouse; they are gathered, with the raw tables, into one DuckDB
file that is validated and published like the DuckDB engine's result, so dashboards and
ad-hoc SQL do not care which engine built it.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb

from ingest.maillog_run import MESSAGES, MINUTES
from ingest.parquet_landing import SCHEMA_PARTITION, export_landing, landing_tables
from mtabench.paths import Paths
from mtabench.pipeline.dbt import run_dbt

MART_SCHEMA = "main"
SEED_SCHEMA = "reference"


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
    maillog = parse_maillogs(paths, progress)
    dbt_vars = {
        "landing_path": str(landing),
        "landing_overrides": {t: str(d) for t, d in (maillog or {}).items()},
    }
    warehouse = paths.spark_dir / "warehouse"
    # the in-memory catalog forgets tables between runs, so their folders must go too
    shutil.rmtree(warehouse, ignore_errors=True)
    warehouse.mkdir(parents=True)
    run_dbt(paths, ["build", "--vars", json.dumps(dbt_vars)], progress, target="spark")
    return gather(paths, warehouse / f"{MART_SCHEMA}.db", landing, dbt_vars["landing_overrides"])


def spark_db(paths: Paths) -> Path:
    return paths.spark_dir / "mtabench.duckdb"


def gather(paths: Paths, marts_dir: Path, landing: Path, overrides: dict[str, str] | None = None) -> Path:
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
            folder = Path((overrides or {}).get(table, landing / table))
            con.execute(
                f"create table raw.{table} as select {col_list} from read_parquet("
                f"'{folder}/*/*.parquet', hive_partitioning = true, hive_types_autocast = false)"
            )
        copy_warehouse(con, marts_dir)
    tmp.replace(out)
    return out


def copy_warehouse(con, marts_dir: Path) -> None:
    """Spark's marts, and the seeds beside them (ministat's t table: the serving file's
    compare_runs() reads it), from their Parquet folders into `con`'s main and reference."""
    for mart in sorted(p.name for p in marts_dir.iterdir() if p.is_dir()):
        files = f"{marts_dir / mart}/*.parquet"
        con.execute(f"create table {MART_SCHEMA}.{mart} as select * from read_parquet('{files}')")
    seeds_dir = marts_dir.parent / f"{SEED_SCHEMA}.db"
    seeds = sorted(p for p in seeds_dir.glob("*") if p.is_dir() and any(p.glob("*.parquet")))
    if seeds:
        con.execute(f"create schema if not exists {SEED_SCHEMA}")
    for seed in seeds:
        con.execute(
            f"create table {SEED_SCHEMA}.{seed.name} as select * from read_parquet('{seed}/*.parquet')"
        )


class SparkParseMismatch(Exception):
    """Spark's parse of a staged maillog disagrees with the ledger (the DuckDB landing)."""


def parse_maillogs(paths: Paths, progress: Callable[[str], None] = print) -> dict[str, Path] | None:
    """The maillog tables of the Spark build (lines, messages, minutes: table -> folder): the
    compiled parser in Spark's executors.

    Every loaded maillog of the ledger must be staged with the same content hash; each
    run's staged files are one task (mapInArrow) that streams them through the same parser
    the DuckDB landing uses. Spark's parsed / noise / quarantined counts per file must equal
    the ledger's: the DuckDB landing stays the one account of every line.
    """
    from ingest import maillog_lines
    from mtabench.engines.spark.session import local_session

    with duckdb.connect(str(paths.db), read_only=True) as con:
        ledger = {
            r[0]: r[1:]
            for r in con.execute(
                "select file_id, sha256, path, lines_parsed, lines_noise, lines_quarantined from raw.files "
                "where format = 'maillog' and status = 'loaded'"
            ).fetchall()
        }
    if not ledger:
        return None
    staged = {s.file_id: s for s in maillog_lines.staged(paths.landing_dir) if s.file_id in ledger}
    missing = [ledger[f][1] for f in ledger if f not in staged or staged[f].sha256 != ledger[f][0]]
    if missing:
        raise SparkParseMismatch(
            f"maillog(s) not staged for Spark (run `mtabench ingest --parquet`): {', '.join(missing)}"
        )
    out = paths.spark_dir / "landing" / "maillog"
    counts_dir = paths.spark_dir / "landing" / "maillog_counts"
    spark = local_session(warehouse=paths.spark_dir / "parse-warehouse")
    try:
        parse_staged(spark, list(staged.values()), out, counts_dir)
        parsed_n = {
            r["file_id"]: r["count"]
            for r in spark.read.parquet(str(out)).groupBy("file_id").count().collect()
        }
        other = {
            r["file_id"]: (r["noise"], r["quarantined"])
            for r in spark.read.parquet(str(counts_dir)).collect()
        }
    finally:
        spark.stop()
    for fid in staged:
        _, path, want_parsed, want_noise, want_q = ledger[fid]
        got = (parsed_n.get(fid, 0), *other.get(fid, (0, 0)))
        if got != (want_parsed, want_noise, want_q):
            raise SparkParseMismatch(
                f"{path}: Spark parsed/noise/quarantined {got} != ledger {(want_parsed, want_noise, want_q)}"
            )
    progress(f"  maillog parsed on Spark: {len(staged)} file(s), {sum(parsed_n.values()):,} rows -> {out}")
    folders = parsed_folders(out)
    for table in (MESSAGES, MINUTES):  # an empty table still has its schema
        schema = paths.landing_dir / table / SCHEMA_PARTITION
        if schema.is_dir():
            shutil.copytree(schema, folders[table] / SCHEMA_PARTITION, dirs_exist_ok=True)
    return folders


def parsed_folders(out: Path) -> dict[str, Path]:
    """Where the Spark parse writes each maillog table: the lines in `out`, the messages and
    minutes beside it."""
    return {"maillog": out, MESSAGES: out.with_name(MESSAGES), MINUTES: out.with_name(MINUTES)}


def parse_staged(spark, staged: list, out: Path, counts_dir: Path, threads: int = 1) -> None:
    """mapInArrow over the staged files (one task per run): every task writes its files' rows
    as Parquet parts under `out/run_key=<run>/` itself, and the run's messages and minutes
    beside (parsed_folders); only per-file counts come back, and the noise / quarantine
    counts are written to `counts_dir`."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mtabench.engines.spark.maillog_udf import PARTS_DDL, task_rows, write_parts_udf

    folders = parsed_folders(out)
    for d in folders.values():
        shutil.rmtree(d, ignore_errors=True)  # this run's parts only (as mode overwrite did)
        d.mkdir(parents=True)
    tasks = task_rows(staged)
    ids = spark.range(len(tasks), numPartitions=max(len(tasks), 1))
    udf = write_parts_udf({t: str(d) for t, d in folders.items()}, tasks, threads)
    done = ids.mapInArrow(udf, PARTS_DDL).collect()
    rows = sorted((r["file_id"], r["noise"], r["quarantined"]) for r in done if r["noise"] + r["quarantined"])
    # a few rows: written by the driver, not by another Spark job
    shutil.rmtree(counts_dir, ignore_errors=True)
    counts_dir.mkdir(parents=True)
    names = ["file_id", "noise", "quarantined"]
    table = pa.table({n: pa.array([r[i] for r in rows], pa.int64()) for i, n in enumerate(names)})
    pq.write_table(table, counts_dir / "part-00000.parquet")


def _union(frames: list):
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out
