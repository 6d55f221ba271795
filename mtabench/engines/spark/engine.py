"""The pipeline's build step on Spark: Parquet landing in, marts as a DuckDB file out.

The DuckDB landing stays the ledger (hashes, line accounting, idempotent re-ingest); it
is exported as the Parquet landing that dbt's `spark` target reads through the
on-run-start hook. The maillog table of that landing is Spark's own parse of the staged
lines (parse_maillogs), checked file by file against the ledger. Spark writes the marts
as Delta tables in its warehouse, named in a Hive metastore that outlives the run, so the
per-run models build incrementally as on DuckDB; their current snapshots are gathered,
with the raw tables, into one DuckDB file that is validated and published like the DuckDB
engine's result, so dashboards and ad-hoc SQL do not care which engine built it.

Everything executors and dbt touch lives under one storage root (`Paths.spark_storage`):
the local spark folder, or a URI every host reaches (storage.py). With a remote root the
local landing is mirrored to `<root>/landing` (unchanged files are not sent again) and
nothing else of the driver's disk is read by the cluster.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from ingest.maillog_run import MESSAGES, MINUTES
from ingest.parquet_landing import SCHEMA_PARTITION, export_landing, landing_tables
from mtabench.engines.spark.session import METASTORE, cluster_conf, delta_conf
from mtabench.engines.spark.storage import Store, spark_conf
from mtabench.paths import DBT_PROJECT, REPO, BadSetting, Paths
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


@dataclasses.dataclass(frozen=True)
class Layout:
    """Where a Spark build reads and writes: the landing it reads, the parsed maillog and
    the warehouse, all under one storage root."""

    root: Store
    landing: Store

    @classmethod
    def of(cls, paths: Paths) -> Layout:
        try:
            root = Store.from_uri(paths.spark_storage)
        except ValueError as exc:
            raise BadSetting(f"MTABENCH_SPARK_STORAGE: {exc}") from exc
        landing = Store.from_uri(paths.landing_dir) if root.is_local else root.child("landing")
        return cls(root, landing)

    @property
    def parsed(self) -> Store:
        return self.root.child("parsed")

    @property
    def warehouse(self) -> Store:
        return self.root.child("warehouse")


def build(paths: Paths, progress: Callable[[str], None] = print, full_refresh: bool = False) -> Path:
    """dbt build on Spark over the Parquet landing; returns the DuckDB file of its marts."""
    local_landing = export(paths, progress)
    layout = Layout.of(paths)
    inputs = build_inputs(local_landing, layout)
    built = paths.spark_dir / BUILT_FROM
    if not full_refresh and spark_db(paths).is_file() and built.is_file() and built.read_text() == inputs:
        progress("  landing, models and parser as at the last build: marts kept (--full-refresh rebuilds)")
        return spark_db(paths)
    built.unlink(missing_ok=True)
    if not layout.root.is_local:
        rep = layout.landing.sync_from(local_landing)
        progress(
            f"  landing mirrored to {layout.landing.uri}: {rep.copied} file(s) sent, "
            f"{rep.kept} unchanged, {rep.removed} removed"
        )
    maillog = parse_maillogs(paths, layout, progress)
    dbt_vars = {
        "landing_path": layout.landing.uri,
        "landing_overrides": {t: s.uri for t, s in (maillog or {}).items()},
    }
    if open_catalog(paths.spark_dir, layout.warehouse):
        progress(f"  new catalog for {layout.warehouse.uri}: a full build")
    env = {
        "MTABENCH_SPARK_WAREHOUSE": layout.warehouse.uri,
        **submit_env(layout, paths.spark_dir, delta=True),
    }
    args = ["build", "--vars", json.dumps(dbt_vars), *(["--full-refresh"] if full_refresh else [])]
    run_dbt(paths, args, progress, target="spark", env=env)
    out = gather(paths, layout.warehouse, local_landing, maillog)
    built.write_text(inputs)
    return out


BUILT_FROM = "built-from.sha256"
DBT_OUTPUT = ("target", "logs")  # dbt's own output, should it be run by hand in the project folder


def build_inputs(landing: Path, layout: Layout) -> str:
    """A digest of everything a Spark build reads: each file of the Parquet landing and of the
    staged maillogs (path, size, mtime: export keeps an unchanged partition's file as it
    was), the dbt project (models, their tests and docs, macros, seeds, profile), the
    project's packages, the compiled parser (the files the executors' pack hashes) and the
    storage root. Equal digests mean equal marts, so the build is skipped."""
    import mtabench_maillog

    from mtabench.engines.spark.pack import PROJECT_PACKAGES, files_under

    digest = hashlib.sha256(layout.root.uri.encode())
    for f in files_under(landing):
        st = f.stat()
        digest.update(f"{f.relative_to(landing)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    roots = [DBT_PROJECT, *(REPO / p for p in PROJECT_PACKAGES), Path(mtabench_maillog.__file__).parent]
    code = (f for root in roots for f in files_under(root) if f.relative_to(root).parts[0] not in DBT_OUTPUT)
    for f in code:
        digest.update(f"{f}\0{f.stat().st_size}\0".encode() + f.read_bytes())
    return digest.hexdigest()


CATALOG_OF = "metastore.warehouse"


def open_catalog(folder: Path, warehouse: Store) -> bool:
    """The metastore (folder/metastore_db) and the warehouse it names are kept between runs. A
    metastore that is missing, or was made for another warehouse (MTABENCH_SPARK_STORAGE
    changed), starts afresh with an empty warehouse: tables the catalog does not know would
    block dbt's. Returns whether it did."""
    marker = folder / CATALOG_OF
    if (folder / METASTORE).is_dir() and marker.is_file() and marker.read_text() == warehouse.uri:
        return False
    shutil.rmtree(folder / METASTORE, ignore_errors=True)
    warehouse.delete_dir()
    warehouse.mkdir()
    folder.mkdir(parents=True, exist_ok=True)
    marker.write_text(warehouse.uri)
    return True


def submit_env(layout: Layout, folder: Path, delta: bool = False) -> dict[str, str]:
    """The storage and cluster settings for dbt's own SparkSession (it starts the JVM from its
    profile, which cannot take a dict from the environment): a properties file named in
    PYSPARK_SUBMIT_ARGS, readable by the owner only, since it may hold the store's keys (on a
    command line every local user could read them). `delta`: Delta Lake and the persistent
    catalog too (dbt's session; the parse's writes plain Parquet)."""
    master = os.environ.get("MTABENCH_SPARK_MASTER", "local[*]")
    conf = {**cluster_conf(master), **spark_conf(layout.root, layout.landing)}
    if delta:
        extra = delta_conf(folder)
        packages = [p for p in (conf.get("spark.jars.packages"), extra.pop("spark.jars.packages")) if p]
        conf = {**conf, **extra, "spark.jars.packages": ",".join(packages)}
    if not conf:
        return {}
    folder.mkdir(parents=True, exist_ok=True)
    props = folder / "dbt-spark.conf"
    fd = os.open(props, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.writelines(f"{k} {v}\n" for k, v in conf.items())
    return {"PYSPARK_SUBMIT_ARGS": f"--properties-file {props} pyspark-shell"}


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def spark_db(paths: Paths) -> Path:
    return paths.spark_dir / "mtabench.duckdb"


def gather(paths: Paths, warehouse: Store, landing: Path, overrides: dict[str, Store] | None = None) -> Path:
    """Marts (Spark's Delta tables) and raw tables (the Parquet landing, or Spark's parse for the
    maillog tables) into one DuckDB file."""
    out = spark_db(paths)
    tmp = out.with_suffix(".building")
    tmp.unlink(missing_ok=True)
    with duckdb.connect(str(paths.db), read_only=True) as src:
        columns = {t: [r[0] for r in src.execute(f"describe raw.{t}").fetchall()] for t in landing_tables()}
    with duckdb.connect(str(tmp)) as con:
        con.execute("create schema raw")
        for table, cols in columns.items():
            col_list = ", ".join(f'"{c}"' for c in cols)  # the landing's column order
            store = (overrides or {}).get(table) or Store.from_uri(landing / table)
            _create_from(con, f"raw.{table}", col_list, store, hive=True)
        copy_warehouse(con, warehouse)
    tmp.replace(out)
    return out


def _create_from_delta(con, table: str, store: Store) -> bool:
    """`table` from the current version of the Delta table in `store`; False when it is none."""
    reader = store.delta_reader()
    if reader is None:
        return False
    name = f"delta_{abs(hash(store.uri)):x}"
    con.register(name, reader)
    try:
        con.execute(f"create table {table} as select * from {name}")
    finally:
        con.unregister(name)
    return True


def _create_from(con, table: str, columns: str, store: Store, hive: bool) -> None:
    """`table` from every Parquet part of `store`: DuckDB's own reader for a local folder;
    an Arrow stream registered on `con` for a remote one, unregistered once read (a
    consumed stream cannot be read again)."""
    if store.is_local:
        glob = f"{store.path}/*/*.parquet" if hive else f"{store.path}/*.parquet"
        opts = ", hive_partitioning = true, hive_types_autocast = false" if hive else ""
        con.execute(f"create table {table} as select {columns} from read_parquet('{glob}'{opts})")
        return
    name = f"scan_{abs(hash(store.uri)):x}"
    con.register(name, store.parquet_reader(hive=hive))
    try:
        con.execute(f"create table {table} as select {columns} from {name}")
    finally:
        con.unregister(name)


def copy_warehouse(con, warehouse: Store | Path) -> None:
    """Spark's marts, and the seeds beside them (ministat's t table: the serving file's
    compare_runs() reads it), from the warehouse's folders (<schema>.db/<table>/) into `con`'s
    main and reference: a Delta table's current version, or a folder of Parquet parts."""
    warehouse = warehouse if isinstance(warehouse, Store) else Store.from_uri(warehouse)
    for schema in (MART_SCHEMA, SEED_SCHEMA):
        folder = warehouse.child(f"{schema}.db")
        tables = sorted(folder.list_dirs()) if folder.exists() else []
        if tables:
            con.execute(f"create schema if not exists {schema}")
        for table in tables:
            store = folder.child(table)
            if _create_from_delta(con, f"{schema}.{table}", store):
                continue
            if store.files(".parquet"):  # a seed dbt did not load has a folder and no part
                _create_from(con, f"{schema}.{table}", "*", store, hive=False)


class SparkParseMismatch(Exception):
    """Spark's parse of a staged maillog disagrees with the ledger (the DuckDB landing)."""


def parse_maillogs(
    paths: Paths, layout: Layout | None = None, progress: Callable[[str], None] = print
) -> dict[str, Store] | None:
    """The maillog tables of the Spark build (lines, messages, minutes: table -> store): the
    compiled parser in Spark's executors.

    Every loaded maillog of the ledger must be staged with the same content hash; each
    run's staged files are one task (mapInArrow) that streams them through the same parser
    the DuckDB landing uses. Spark's parsed / noise / quarantined counts per file must equal
    the ledger's: the DuckDB landing stays the one account of every line.
    """
    from ingest import maillog_lines
    from mtabench.engines.spark.session import local_session

    layout = layout or Layout.of(paths)
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
    # executors read each staged input where the landing is: the local file, or its mirror
    inputs = [
        dataclasses.replace(s, input=layout.landing.child(*s.input.relative_to(paths.landing_dir).parts).uri)
        for s in staged.values()
    ]
    out = layout.parsed.child("maillog")
    counts = layout.parsed.child("maillog_counts")
    # the storage settings (and keys) from the properties file, not the JVM's command line
    with _environ(submit_env(layout, paths.spark_dir)):
        spark = local_session(warehouse=paths.spark_dir / "parse-warehouse")
    try:
        parse_staged(spark, inputs, out, counts)
        parsed_n = {
            r["file_id"]: r["count"] for r in spark.read.parquet(out.uri).groupBy("file_id").count().collect()
        }
        other = {
            r["file_id"]: (r["noise"], r["quarantined"]) for r in spark.read.parquet(counts.uri).collect()
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
    rows = sum(parsed_n.values())
    progress(f"  maillog parsed on Spark: {len(staged)} file(s), {rows:,} rows -> {out.uri}")
    folders = parsed_folders(out)
    for table in (MESSAGES, MINUTES):  # an empty table still has its schema
        schema = paths.landing_dir / table / SCHEMA_PARTITION
        for f in sorted(schema.glob("*.parquet")):
            folders[table].child(SCHEMA_PARTITION).upload(f, f.name)
    return folders


def parsed_folders(out: Store) -> dict[str, Store]:
    """Where the Spark parse writes each maillog table: the lines in `out`, the messages and
    minutes beside it."""
    parent = out.parent
    return {"maillog": out, MESSAGES: parent.child(MESSAGES), MINUTES: parent.child(MINUTES)}


def parse_staged(spark, staged: list, out: Store | Path, counts: Store | Path, threads: int = 1) -> None:
    """mapInArrow over the staged files (runs packed into tasks as Spark packs files,
    task_groups; a run's files one stream): every task writes its runs' rows
    as Parquet parts under `out/run_key=<run>/` itself, and the run's messages and minutes
    beside (parsed_folders); only per-file counts come back, and the noise / quarantine
    counts are written to `counts`. A staged input may be a path or a URI (storage.py)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mtabench.engines.spark.maillog_udf import PARTS_DDL, task_groups, task_rows, write_parts_udf

    out = out if isinstance(out, Store) else Store.from_uri(out)
    counts = counts if isinstance(counts, Store) else Store.from_uri(counts)
    folders = parsed_folders(out)
    for d in folders.values():
        d.delete_dir()  # this run's parts only (as mode overwrite did)
        d.mkdir()
    tasks = task_rows(staged)
    groups = task_groups(tasks, spark.sparkContext.defaultParallelism)
    ids = spark.range(len(groups), numPartitions=max(len(groups), 1))
    udf = write_parts_udf({t: d.uri for t, d in folders.items()}, tasks, groups, threads)
    done = ids.mapInArrow(udf, PARTS_DDL).collect()
    rows = sorted((r["file_id"], r["noise"], r["quarantined"]) for r in done if r["noise"] + r["quarantined"])
    # a few rows: written by the driver, not by another Spark job
    counts.delete_dir()
    counts.mkdir()
    names = ["file_id", "noise", "quarantined"]
    table = pa.table({n: pa.array([r[i] for r in rows], pa.int64()) for i, n in enumerate(names)})
    with counts.open_output("part-00000.parquet") as f:
        pq.write_table(table, f)
