"""Bulk tables (raw.maillog) as per-file Parquet behind a DuckDB view.

A parser with `record_batches` hands over Arrow batches, one list per block; each block's
rows go to one Parquet part (every column, LZ4; one row group) in its file's folder
(`<table>/file_id=<id>/`, a Hive partition: a query on some files' rows opens only
their parts, not the footer of every part in the archive), written
by a pool of writer threads under a temporary name and renamed, while the parser works on
the next block. `raw.parquet_files` records which parts hold each input file's rows (in
block order), in the same transaction as the file's `raw.files` row, and the view
`raw.<table>` is rebuilt in that transaction over exactly the recorded parts. So a crash
between a rename and the commit (or a stale file) is never visible: the committed view
does not name it. Files no committed row names are removed the next time the schema is
ensured.

The Parquet folder sits beside the DuckDB file (`<db>.parquet/`); an in-memory database
(tests, `mtabench parse`) uses a folder under the temporary directory. Noise and
quarantine lines go to raw.noise / raw.quarantine as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import queue
import tempfile
import threading
import uuid
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.ledger import LineCounts

if TYPE_CHECKING:
    import pyarrow as pa

# pyarrow is imported where an Arrow block is handled, not here: the compiled parser's
# blocks write their own Parquet, and pyarrow's import (~0.3 s with numpy) would be a fixed
# cost of every maillog ingest

FILES_DDL = "file_id BIGINT NOT NULL, table_name VARCHAR NOT NULL, path VARCHAR NOT NULL"
NOISE, QUARANTINE = "__noise", "__quarantine"
WRITERS = 2  # Parquet parts written at once (pyarrow encodes a file on one thread)


def _lit(v: str) -> str:
    """A SQL string literal. The landing's statements inline their values instead of binding
    parameters: DuckDB's first parameter binding imports numpy and pandas (~0.35 s), a fixed
    cost of every maillog ingest that binds nothing else."""
    return "'" + str(v).replace("'", "''") + "'"


def sql_value(v) -> str:
    """A Python value as a SQL literal (None, bool, int, float, str, date, datetime), for the
    landing's statements that would otherwise bind parameters (see `_lit`)."""
    import math
    from datetime import date, datetime

    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else f"{_lit(repr(v))}::DOUBLE"
    if isinstance(v, datetime):
        return f"TIMESTAMP {_lit(v.isoformat(sep=' '))}"
    if isinstance(v, date):
        return f"DATE {_lit(v.isoformat())}"
    return _lit(str(v))


def execute_values(con, sql: str, rows: list[tuple | list]) -> None:
    """`sql` (ending in VALUES) with `rows` inlined as literals, up to 1,000 rows a statement;
    a text holding NUL, which a statement's text cannot, is bound as a parameter instead."""
    if any("\0" in v for r in rows for v in r if isinstance(v, str)):
        con.executemany(sql + " (" + ", ".join("?" * len(rows[0])) + ")", rows)
        return
    for i in range(0, len(rows), 1000):
        values = ", ".join("(" + ", ".join(sql_value(v) for v in r) + ")" for r in rows[i : i + 1000])
        con.execute(f"{sql} {values}")


def store_dir(con) -> Path:
    row = con.execute(
        "select path from duckdb_databases() where database_name = current_database()"
    ).fetchone()
    if row and row[0] and row[0] != ":memory:":
        p = Path(row[0]).resolve()
        return p.with_name(p.name + ".parquet")
    return Path(tempfile.gettempdir()) / f"mtabench-memdb-{os.getpid()}-{id(con):x}"


def _columns(ddl: str) -> list[tuple[str, str]]:
    return [tuple(c.strip().split(" ")[:2]) for c in ddl.split(",")]  # type: ignore[misc]


def ensure(con, table: str, ddl: str) -> None:
    """The ledger table and the view; an old landing's physical table is dropped (the
    loader re-parses its files: the parser version changed with the move), and its parts
    from before the partition folders are moved into them. The caller sweeps (`sweep`) once
    after ensuring its tables: each sweep walks the whole store."""
    con.execute(f"create table if not exists raw.parquet_files ({FILES_DDL})")
    # parts written with every column (NULL where no row sets it): NULL for a part from before
    con.execute("alter table raw.parquet_files add column if not exists all_columns BOOLEAN")
    # rows in the part, where the reader needs them without opening it (maillog_messages)
    con.execute("alter table raw.parquet_files add column if not exists rows BIGINT")
    kind = con.execute(
        "select table_type from information_schema.tables "
        f"where table_schema = 'raw' and table_name = {_lit(table)}"
    ).fetchone()
    if kind and kind[0] == "BASE TABLE":
        con.execute(f"drop table raw.{table}")
    _partition(con, table)
    rebuild_view(con, table, ddl)


def part_path(d: Path, table: str, file_id: int, name: str) -> Path:
    """Where a part of `file_id`'s rows lives: its file's Hive partition folder."""
    return d / table / f"file_id={int(file_id)}" / name


def _partitioned(path: str) -> bool:
    # string ops, not pathlib: called for every part of the store at each ingest (8,000 parts
    # at 236x the samples: 1.0 s with Path, ~0.01 s so)
    return os.path.basename(os.path.dirname(path)).startswith("file_id=")


def _partition(con, table: str) -> None:
    """Parts of a landing from before the partition folders, moved into them: each is
    hard-linked at its new path, the ledger names the new paths in one transaction, and the
    sweep then removes the old names (a crash in between leaves a file no row names, which
    the next sweep removes, never a row naming a missing file)."""
    rows = con.execute(
        f"select file_id, path from raw.parquet_files where table_name = {_lit(table)}"
    ).fetchall()
    flat = [(fid, p) for fid, p in rows if not _partitioned(p)]
    if not flat:
        return
    moves = []
    for fid, path in flat:
        old = Path(path)
        new = part_path(old.parent, table, fid, old.name)
        new.parent.mkdir(parents=True, exist_ok=True)
        if not new.exists():
            os.link(old, new)
        moves.append((path, str(new)))
    values = ", ".join(f"({_lit(a)}, {_lit(b)})" for a, b in moves)
    con.execute("begin")
    con.execute(
        f"update raw.parquet_files set path = m.new from (values {values}) as m(old, new) "
        "where raw.parquet_files.path = m.old"
    )
    con.execute("commit")


def rebuild_view(con, table: str, ddl: str) -> None:
    cols = _columns(ddl)
    empty = "select " + ", ".join(f"cast(null as {t}) as {n}" for n, t in cols) + " where false"
    rows = con.execute(
        "select path, coalesce(all_columns, false) from raw.parquet_files "
        f"where table_name = {_lit(table)} order by file_id, path"
    ).fetchall()
    paths = [r[0] for r in rows]
    if paths:
        files = ", ".join(_lit(p) for p in paths)
        select = ", ".join(f"cast({n} as {t}) as {n}" for n, t in cols)
        # Parts with every column are read by name as one schema, which binds from the first
        # part's footer. A part from before holds only the columns some row of its block set:
        # then union_by_name, which reads every part's footer each time the view is bound
        # (0.8 s against 0.15 s at 236x the samples: every dbt model, test and check on the
        # maillog binds it). The typed empty relation names every column, so a column no
        # part has is NULL of its type too.
        union = "" if all(r[1] for r in rows) else ", union_by_name = true"
        # file_id from the part's folder: a filter on it picks the parts before any is opened
        # (0.6 s of footers per query at 236x the samples, 2,600 parts, against 0.08 s)
        partitioned = all(_partitioned(p) for p in paths)
        hive = ", hive_partitioning = true, hive_types = {'file_id': 'BIGINT'}" if partitioned else ""
        body = (
            f"select {select} from "
            f"(select * from read_parquet([{files}]{union}{hive}) union all by name {empty})"
        )
    else:
        body = empty
    # binding the view reads every part's footer (0.5 s at 236x the samples): an ingest that
    # landed nothing leaves the view as it is, known by the hash of its text in its comment
    digest = hashlib.sha1(body.encode()).hexdigest()
    if con.execute(
        "select 1 from duckdb_views() where schema_name = 'raw' "
        f"and view_name = {_lit(table)} and comment = {_lit(digest)}"
    ).fetchone():
        return
    con.execute(f"create or replace view raw.{table} as {body}")
    con.execute(f"comment on view raw.{table} is {_lit(digest)}")


def sweep(con) -> None:
    """Remove Parquet files no committed ledger row names (crash leftovers, replaced files),
    and the partition folders left empty."""
    d = store_dir(con)
    if not d.is_dir():
        return
    keep = {r[0] for r in con.execute("select path from raw.parquet_files").fetchall()}
    # os.walk (scandir: no stat per entry), folders after what they hold; only a folder left
    # with no file is tried for removal (a rglob with a stat and rmdir per entry took ~0.4 s
    # of each ingest at 5,000 run folders)
    for folder, _subdirs, files in os.walk(d, topdown=False):
        kept = 0
        for name in files:
            f = os.path.join(folder, name)
            if f in keep:
                kept += 1
            else:
                Path(f).unlink(missing_ok=True)
        if not kept and folder != str(d):
            with contextlib.suppress(OSError):  # a sub-folder still holds files
                os.rmdir(folder)


def forget(con, file_id: int, tables: dict[str, str]) -> None:
    """Unlist a file's Parquet (its rows leave the views when the transaction commits)."""
    where = f"where file_id = {int(file_id)}"
    n = con.execute(f"select count(*) from raw.parquet_files {where}").fetchone()[0]
    if n:
        con.execute(f"delete from raw.parquet_files {where}")
        for table, ddl in tables.items():
            rebuild_view(con, table, ddl)


def prefetch(blocks: Iterable, depth: int = 1) -> Iterator:
    """Iterate `blocks` in a thread, up to `depth` items ahead: the parser (Rust, GIL
    released) works on block N+1 while the caller writes block N (pyarrow's Parquet
    writer releases the GIL too). Errors of the producer are raised in the caller; when
    the caller stops early the producer stops at its next item."""
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    done = object()

    def produce() -> None:
        it = iter(blocks)
        try:
            for item in it:
                while not stop.is_set():
                    try:
                        q.put((item, None), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    break
            else:
                q.put((done, None))
        except BaseException as exc:  # handed to the caller
            q.put((done, exc))
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    t = threading.Thread(target=produce, name="maillog-parse", daemon=True)
    t.start()
    try:
        while True:
            item, exc = q.get()
            if exc is not None:
                raise exc
            if item is done:
                return
            yield item
    finally:
        stop.set()
        while t.is_alive():  # unblock a producer waiting on a full queue
            with contextlib.suppress(queue.Empty):
                q.get(timeout=0.1)
        t.join()


def _write_part(tmp: Path, final: Path, tb: pa.Table) -> None:
    """One block's rows as one Parquet file (one row group), under a temporary name, renamed
    when complete. Runs in a writer thread: pyarrow releases the GIL while it encodes.

    Every column is written, NULL where no row sets it, so the view reads the parts as one
    schema (rebuild_view). LZ4 on every column,
    no dictionaries (bench/maillog_bench.py: cheaper to encode than zstd on the free text
    and dictionaries on the low-cardinality columns, files ~1.5x the size)."""
    import pyarrow.parquet as pq

    keep = tb.schema.names
    writer = pq.ParquetWriter(
        tmp,
        tb.schema,
        compression="lz4",
        use_dictionary=False,
        write_statistics=[n for n in ("file_id", "line_no", "ts") if n in keep],
    )
    try:
        writer.write_table(tb, row_group_size=max(tb.num_rows, 1))
    finally:
        writer.close()
    os.replace(tmp, final)


def _write_block(tmp: Path, final: Path, block, file_id: int) -> None:
    """A compiled parser's block as one Parquet part (its rows; noise and quarantine left
    out), written by the crate with the GIL released, then renamed."""
    block.write(str(tmp), file_id, True)  # every column: one schema (rebuild_view)
    os.replace(tmp, final)


def _land_skipped(con, file_id: int, skipped: list[tuple]) -> tuple[int, int]:
    """A block's noise and quarantine lines ((line_no, kind, detail, line)) to their tables."""
    noise = [(int(file_id), ln, 0, d, m) for ln, k, d, m in skipped if k == NOISE]
    quarantine = [(int(file_id), ln, 0, d, m) for ln, k, d, m in skipped if k == QUARANTINE]
    if noise:
        execute_values(con, "insert into raw.noise (file_id, line_no, item_no, kind, text) values", noise)
    if quarantine:
        sql = "insert into raw.quarantine (file_id, line_no, item_no, reason, text) values"
        execute_values(con, sql, quarantine)
    return len(noise), len(quarantine)


def _split_arrow_block(con, file_id: int, batches: list[pa.RecordBatch], names: list[str]):
    """An Arrow block's noise and quarantine lines to their tables; the rest as the part's
    table (provenance columns added, in the view's column order). Returns (lines, noise,
    quarantined, table)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tb = pa.Table.from_batches(batches)
    lines = tb.num_rows
    counts = {"noise": 0, "quarantine": 0}
    kind = tb.column("kind")
    is_noise = pc.equal(kind, NOISE)
    is_q = pc.equal(kind, QUARANTINE)
    other = pc.or_(is_noise, is_q)
    if pc.any(other).as_py():
        for mask, target, label in ((is_noise, "noise", "kind"), (is_q, "quarantine", "reason")):
            part = tb.filter(mask).select(["line_no", "detail", "message"])
            if part.num_rows:
                con.register("_landing_arrow", part)
                try:
                    con.execute(
                        f"insert into raw.{target} (file_id, line_no, item_no, {label}, text) "
                        f"select {int(file_id)}, line_no, 0, detail, message from _landing_arrow"
                    )
                finally:
                    con.unregister("_landing_arrow")
                counts[target] += part.num_rows
        tb = tb.filter(pc.invert(other))
    n = tb.num_rows
    tb = tb.append_column("file_id", pa.repeat(pa.scalar(int(file_id), pa.int64()), n))
    tb = tb.append_column("item_no", pa.repeat(pa.scalar(0, pa.int32()), n))
    return lines, counts["noise"], counts["quarantine"], tb.select(names)


def land(
    con,
    file_id: int,
    table: str,
    ddl: str,
    blocks: Iterable[list[pa.RecordBatch]],
    view: bool = True,
    streamed: bool = False,
) -> LineCounts:
    """Write a file's batches: rows to Parquet, noise and quarantine to their tables.

    Each block becomes one Parquet part (`<table>/file_id=<id>/<tag>-<seq>.parquet`), written
    by WRITERS threads while the parser works on the next block; the view lists a file's
    parts in `seq` order, so rows keep the file's line order. The ledger rows naming the
    parts are inserted only after every part is complete.

    `view=False` leaves the view as it was: the caller lands many files and calls
    `rebuild_view` once at the end. Binding the view reads the footer of every part
    (when it is a union by name), so a rebuild per file made each file's landing grow with the
    archive.

    `streamed`: the blocks come from the crate's own threads (`Parser.stream`), already
    parsed ahead: they are taken as they come, with one writer, so that no more blocks are
    held at once than the stages working on them (memory stays flat)."""
    d, stem = store_dir(con), uuid.uuid4().hex[:12]
    part_path(d, table, file_id, stem).parent.mkdir(parents=True, exist_ok=True)
    names = [n for n, _ in _columns(ddl)]
    parts: list[tuple[Path, Path]] = []
    pending: deque[Future] = deque()
    writers = 1 if streamed else WRITERS
    pool = ThreadPoolExecutor(max_workers=writers, thread_name_prefix="parquet-part")
    total = noise = quarantined = 0
    unknown: list[int] = []  # line numbers of known programs' lines filed as `other`
    try:
        for seq, item in enumerate(blocks if streamed else prefetch(blocks)):
            final = part_path(d, table, file_id, f"{stem}-{seq:06d}.parquet")
            tmp = final.with_name("." + final.name + ".tmp")
            if hasattr(item, "write"):  # a compiled parser's block: it writes its own part
                lines = item.lines
                n_noise, n_q = _land_skipped(con, file_id, item.skipped() if item.rows < item.lines else [])
                unknown += item.unknown()
                job = (_write_block, tmp, final, item, int(file_id))
            else:
                lines, n_noise, n_q, tb = _split_arrow_block(con, file_id, item, names)
                unknown += _unknown_lines(tb)
                job = (_write_part, tmp, final, tb)
                del tb
            total += lines
            noise += n_noise
            quarantined += n_q
            parts.append((tmp, final))
            pending.append(pool.submit(*job))
            del item, job
            while len(pending) >= writers:  # bounded: memory stays flat
                pending.popleft().result()
        while pending:
            pending.popleft().result()
    except BaseException:
        pool.shutdown(wait=True, cancel_futures=True)
        for tmp, final in parts:
            tmp.unlink(missing_ok=True)
            final.unlink(missing_ok=True)
        raise
    finally:
        pool.shutdown(wait=True)
    forget(con, file_id, {})
    con.execute(
        f"delete from raw.parquet_files where file_id = {int(file_id)} and table_name = {_lit(table)}"
    )
    if total and parts:
        values = ", ".join(f"({int(file_id)}, {_lit(table)}, {_lit(str(final))}, true)" for _, final in parts)
        con.execute(f"insert into raw.parquet_files (file_id, table_name, path, all_columns) values {values}")
    if view:
        rebuild_view(con, table, ddl)
    return LineCounts(
        total, total - noise - quarantined, noise, quarantined, len(unknown), min(unknown, default=None)
    )


def _unknown_lines(tb: pa.Table) -> list[int]:
    """Line numbers of an Arrow block's lines of a known program filed as kind `other` (the
    crate decides which programs it knows)."""
    if "kind" not in tb.schema.names or "program" not in tb.schema.names:
        return []
    import pyarrow as pa
    import pyarrow.compute as pc
    from mtabench_maillog import known_program

    other = tb.filter(pc.equal(tb.column("kind"), "other"))
    known = [p for p in pc.unique(other.column("program")).to_pylist() if p and known_program(p)]
    if not known:
        return []
    return other.filter(pc.is_in(other.column("program"), pa.array(known))).column("line_no").to_pylist()
