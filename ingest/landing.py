"""The DuckDB landing schema `raw` and per-file, transactional writes to it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import duckdb

from ingest import arrow_landing
from ingest.ledger import KEEP_ITEMS, PROVENANCE, BatchTally, Ledger, LineCounts
from ingest.line_guard import GuardedParse
from ingest.parsers import PARSERS
from ingest.record_insert import insert_records
from ingest.value_fit import fit_ledger

if TYPE_CHECKING:
    from ingest.parsers.base import ParseContext, Parser
    from ingest.source import FileSource

CORE_DDL = {
    "files": """
        file_id BIGINT PRIMARY KEY, run_key VARCHAR NOT NULL, path VARCHAR NOT NULL,
        size_bytes BIGINT, sha256 VARCHAR, format VARCHAR, parser_version VARCHAR,
        status VARCHAR NOT NULL, message VARCHAR, encoding VARCHAR,
        lines_total BIGINT, lines_parsed BIGINT, lines_noise BIGINT, lines_quarantined BIGINT,
        ingested_at TIMESTAMP, mtime_ns BIGINT, lines_other_known BIGINT, first_other_known_line BIGINT""",
    "runs": """
        run_key VARCHAR PRIMARY KEY, run_id VARCHAR NOT NULL, source_kind VARCHAR, bundle VARCHAR,
        has_manifest BOOLEAN, manifest_error VARCHAR, inferred VARCHAR,
        label VARCHAR, tags_json VARCHAR, timezone VARCHAR, utc_offset_minutes INTEGER,
        run_date DATE, start_utc TIMESTAMP, end_utc TIMESTAMP, monitor_start_utc TIMESTAMP,
        monitor_end_utc TIMESTAMP, queue_drained_utc TIMESTAMP, duration_s DOUBLE,
        load_exit_code INTEGER, hostname VARCHAR, tool_name VARCHAR, tool_version VARCHAR,
        tool_command VARCHAR, mta_name VARCHAR, mta_version VARCHAR, settings_json VARCHAR,
        notes VARCHAR, manifest_json VARCHAR, group_name VARCHAR, baseline_run_id VARCHAR""",
    "noise": f"{PROVENANCE}, kind VARCHAR, text VARCHAR",
    "quarantine": f"{PROVENANCE}, reason VARCHAR, text VARCHAR",
}


ADDED_RUN_COLUMNS = ("group_name", "baseline_run_id")


def parser_tables() -> dict[str, str]:
    out: dict[str, str] = {}
    for p in PARSERS.values():
        for table, cols in p.tables.items():
            out[table] = f"{PROVENANCE}, {cols}"
    return {**out, **derived_tables()}  # whole DDL: their rows are not lines


def bulk_tables() -> dict[str, str]:
    """Tables of parsers with an Arrow bulk path (and the tables derived from their lines,
    ingest/maillog_run.py): per-file Parquet behind a view (arrow_landing)."""
    bulk = {
        t
        for p in PARSERS.values()
        if hasattr(p, "record_batches")
        for t in [*p.tables, *getattr(p, "derived_tables", {})]
    }
    return {t: cols for t, cols in parser_tables().items() if t in bulk}


def derived_tables() -> dict[str, str]:
    """Tables a parser computes from a file's landed lines (rows per message, not per line)."""
    return {t: ddl for p in PARSERS.values() for t, ddl in getattr(p, "derived_tables", {}).items()}


def refresh_views(con) -> None:
    """Rebuild the views of the Parquet-landed tables from their ledger (after landing files
    with `view=False`)."""
    for table, cols in bulk_tables().items():
        arrow_landing.rebuild_view(con, table, cols)


def ensure_schema(con) -> None:
    con.execute("create schema if not exists raw")
    bulk = bulk_tables()
    for table, cols in {**CORE_DDL, **parser_tables()}.items():
        if table not in bulk:
            con.execute(f"create table if not exists raw.{table} ({cols})")
    for table, cols in bulk.items():
        arrow_landing.ensure(con, table, cols)
    arrow_landing.sweep(con)  # once for every table: each sweep walks the whole store
    # columns added after a landing was first created (create-if-not-exists keeps the old shape)
    for col in ADDED_RUN_COLUMNS:
        con.execute(f"alter table raw.runs add column if not exists {col} VARCHAR")
    # the file's mtime when hashed (ns; NULL = unknown, so hashed once more): with size_bytes,
    # what lets the loader skip hashing an unchanged file (ingest/file_stat.py, known_sha)
    con.execute("alter table raw.files add column if not exists mtime_ns BIGINT")
    # maillog lines of a known program the parser filed as `other` (shapes it misses)
    for col in ("lines_other_known", "first_other_known_line"):
        con.execute(f"alter table raw.files add column if not exists {col} BIGINT")


def per_file_tables() -> list[str]:
    bulk = bulk_tables()
    return ["noise", "quarantine", *(t for t in parser_tables() if t not in bulk)]


NO_ROWS_FORMATS = {"manifest", "empty", "bundle"}  # recorded in raw.files only, never parsed


def tables_of(fmt: str | None) -> list[str]:
    """The per-file tables a file landed as `fmt` can hold rows in: noise, quarantine and its
    parser's tables. A format this version has no parser for (one a past version parsed?)
    may have rows anywhere: every table."""
    parser = PARSERS.get(fmt or "")
    if parser is None:
        return ["noise", "quarantine"] if fmt is None or fmt in NO_ROWS_FORMATS else per_file_tables()
    bulk = bulk_tables()
    return ["noise", "quarantine", *(t for t in parser.tables if t not in bulk)]


def delete_file_rows(
    con, file_id: int, fmt: str | None = None, *, every_table: bool = True, view: bool = True
) -> None:
    """Remove a landed file's rows: from every per-file table, or (every_table=False) only
    from those its landed format `fmt` writes (a delete scans its table: 2-4 scans, not ~20).
    `view=False` leaves the Parquet-landed tables' views to the caller's one rebuild
    (refresh_views), as land_file(view=False) does: a rebuild per re-landed file bound the
    view once per file (a parser upgrade re-lands every maillog of the archive)."""
    tables = per_file_tables() if every_table else tables_of(fmt)
    for table in tables:
        con.execute(f"delete from raw.{table} where file_id = {int(file_id)}")
    arrow_landing.forget(con, file_id, bulk_tables() if view else {})


def write_ledger(con, file_id: int, ledger: Ledger, tables: dict[str, str]) -> None:
    fit_ledger(ledger, tables)  # a value that does not fit its column quarantines its line
    for table in tables:
        insert_records(con, table, ledger.rows.get(table, []) + ledger.meta.get(table, []), file_id)
    insert_records(con, "noise", ledger.noise, file_id)
    insert_records(con, "quarantine", ledger.quarantine, file_id)
    for table, first, last, values in ledger.updates:  # rows an earlier batch of the file landed
        sets = ", ".join(f'"{k}" = ?' for k in values)
        unset = " and ".join(f'"{k}" is null' for k in values)
        con.execute(
            f"update raw.{table} set {sets} where file_id = ? and line_no between ? and ? and {unset}",
            [*values.values(), file_id, first, last],
        )


def land_file(
    con, parser: Parser, file_id: int, source: FileSource, ctx: ParseContext, view: bool = True
) -> LineCounts:
    """Parse one file and write its rows, noise and quarantine (inside the caller's transaction).
    `view=False`: a Parquet-landed table's view is left for the caller's `refresh_views`.

    The file is read and landed a batch at a time (Parser.batches): each batch's ledger is
    written and dropped, so memory stays flat whatever the file's length; the caller's one
    transaction still makes the file land whole or not at all. A maillog lands as a stream
    of one file (ingest/maillog_run.py): its lines, messages and minutes in one pass."""
    if parser.format == "maillog":
        from ingest import maillog_run

        try:
            ((_, counts),) = maillog_run.land_run(con, [(file_id, source)], ctx)
        except maillog_run.FileFailed as failed:
            raise failed.__cause__ from None
        if view:
            refresh_views(con)
        return counts
    bulk = getattr(parser, "record_batches", None)
    if bulk is not None:
        ((table, cols),) = parser.tables.items()
        blocks = bulk(source.path, source.rel_path, ctx)
        return arrow_landing.land(con, file_id, table, f"{PROVENANCE}, {cols}", blocks, view=view)
    guarded = GuardedParse(parser, source.lines, ctx, where=source.rel_path)  # a bad line is quarantined
    tally = BatchTally()
    no_items = KEEP_ITEMS.set(False)  # the per-line view is for `mtabench parse`, not landed
    with _row_groups_written_as_filled(con):
        try:
            for ledger in guarded:
                write_ledger(con, file_id, ledger, parser.tables)
                tally.add(ledger)
        finally:
            KEEP_ITEMS.reset(no_items)
    return tally.counts(guarded.lines_total or 0)


# DuckDB's memory while a file lands in batches: its own row groups are written as they fill,
# and the blocks just written are not kept cached (DuckDB keeps them, up to memory_limit:
# 200 MB more for 1 GB of vmstat than for 0.1 GB)
LANDING_MEMORY = "100MB"
_SHOWN_AFTER_RESTORE: dict[str, str] = {}  # a limit as DuckDB shows it once restored -> the value set


@contextmanager
def _row_groups_written_as_filled(con) -> Iterator[None]:
    """While a file lands: DuckDB writes each row group a transaction fills at once (it keeps
    5, `write_buffer_row_group_count`, ~600,000 rows, 180 MB of vmstat rows, in memory
    first), and its memory is held to LANDING_MEMORY (it evicts the blocks it has written).
    A file's batches land in one transaction: so the memory a file needs does not depend on
    its length. Both settings are restored after."""
    (before,) = con.execute("select current_setting('write_buffer_row_group_count')").fetchone()
    (limit,) = con.execute("select current_setting('memory_limit')").fetchone()
    limit = _SHOWN_AFTER_RESTORE.get(limit, limit)  # DuckDB shows a limit rounded down
    con.execute("set write_buffer_row_group_count = 1")
    lowered = False
    try:
        con.execute(f"set memory_limit = '{LANDING_MEMORY}'")
        lowered = True
    except duckdb.Error:  # memory in use that cannot be evicted: land under the usual limit
        pass
    try:
        yield
    finally:
        con.execute(f"set write_buffer_row_group_count = {int(before)}")
        if lowered:
            con.execute(f"set memory_limit = '{limit}'")
            (shown,) = con.execute("select current_setting('memory_limit')").fetchone()
            _SHOWN_AFTER_RESTORE[shown] = limit
