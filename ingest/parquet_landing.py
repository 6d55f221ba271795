"""The landing as Parquet: one folder per format (landing table), Hive-partitioned by run.

Layout: `<dir>/<table>/run_key=<url-encoded key>/data_0.parquet`, readable by DuckDB
(`read_parquet(..., hive_partitioning=true)`) and Spark (`parquet.`<dir>/<table>``)
alike. Every table folder also holds an empty `run_key=__schema__` partition, so a table
with no rows yet (no quarantined lines, say) still has a schema both engines can read.

Runs are written partition by partition: a run whose rows did not change keeps its files
(same bytes, same mtime), so downstream copies (rsync to a cluster, object storage) move
only the runs that changed. Partitions of runs that left the landing are removed.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import duckdb

from ingest.landing import CORE_DDL, parser_tables

SCHEMA_PARTITION = "run_key=__schema__"


@dataclass(frozen=True)
class ExportReport:
    tables: int
    partitions_written: int
    partitions_kept: int
    partitions_removed: int


def landing_tables() -> list[str]:
    return [*CORE_DDL, *parser_tables()]


def _rows_sql(table: str) -> str:
    """The table's rows with the run they belong to (per-file tables join raw.files)."""
    if table in ("runs", "files"):
        return f"select * from raw.{table}"
    return f"select t.*, f.run_key from raw.{table} t join raw.files f using (file_id)"


def _partition_dir(root: Path, table: str, run_key: str) -> Path:
    # same escaping DuckDB's PARTITION_BY and Spark use for Hive values ('/' -> %2F)
    return root / table / f"run_key={quote(run_key, safe='')}"


def export_landing(con: duckdb.DuckDBPyConnection, root: Path) -> ExportReport:
    """Write (or refresh) the Parquet landing under `root` from the DuckDB landing."""
    root.mkdir(parents=True, exist_ok=True)
    written = kept = removed = 0
    tables = landing_tables()
    for table in tables:
        tdir = root / table
        cols = [r[0] for r in con.execute(f"describe ({_rows_sql(table)})").fetchall() if r[0] != "run_key"]
        col_list = ", ".join(f'"{c}"' for c in cols)
        order = "file_id, line_no, item_no" if "line_no" in cols else cols[0]
        _write_schema_partition(
            con, tdir / SCHEMA_PARTITION, f"select {col_list} from ({_rows_sql(table)}) limit 0"
        )
        prints = _fingerprints(con, table, col_list, order)
        live = set()
        for run_key, fp in prints.items():
            pdir = _partition_dir(root, table, run_key)
            live.add(pdir.name)
            stamp = pdir / ".fingerprint"
            if stamp.exists() and stamp.read_text() == fp:
                kept += 1
                continue
            tmp = pdir.with_name(pdir.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            con.execute(
                f"copy (select {col_list} from ({_rows_sql(table)}) where run_key = ? order by {order}) "
                f"to '{tmp / 'data_0.parquet'}' (format parquet, compression zstd)",
                [run_key],
            )
            (tmp / ".fingerprint").write_text(fp)
            shutil.rmtree(pdir, ignore_errors=True)
            tmp.rename(pdir)
            written += 1
        for old in tdir.iterdir():
            if old.name != SCHEMA_PARTITION and old.name not in live:
                shutil.rmtree(old, ignore_errors=True)
                removed += 1
    return ExportReport(len(tables), written, kept, removed)


def _write_schema_partition(con, pdir: Path, empty_sql: str) -> None:
    """The table's empty schema file; replaced only when the schema changed (keeps its mtime)."""
    pdir.mkdir(parents=True, exist_ok=True)
    target, tmp = pdir / "data_0.parquet", pdir / "data_0.parquet.tmp"
    con.execute(f"copy ({empty_sql}) to '{tmp}' (format parquet)")
    if target.exists() and target.read_bytes() == tmp.read_bytes():
        tmp.unlink()
    else:
        tmp.replace(target)


def _fingerprints(con, table: str, col_list: str, order: str) -> dict[str, str]:
    """run_key -> row count and sum of row hashes: decides whether a partition is rewritten
    (cheap next to writing Parquet; a changed row changes the sum)."""
    rows = con.execute(
        f"select run_key, count(*), sum(hash({col_list})) from ({_rows_sql(table)}) group by run_key"
    ).fetchall()
    return {key: hashlib.sha1(f"{n}:{h}:{order}".encode()).hexdigest() for key, n, h in rows}
