"""The maillog parse as a Spark mapInArrow function: each run's staged maillog
files are parsed as one stream in time order by the very parser and Parquet writer the DuckDB
landing runs (ingest/maillog_run.py, ingest/parsers/maillog.py over crates/maillog): lines,
the run's messages and each file's counts per minute."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa

from ingest.parsers.base import ParseContext


def task_rows(staged: list) -> list[dict]:
    """One dict per run: its staged files (ingest.maillog_lines.StagedLines), what its task needs."""
    runs: dict[str, list[dict]] = {}
    for s in staged:
        runs.setdefault(s.run_key, []).append(_file_row(s))
    return [{"run_key": k, "files": v} for k, v in sorted(runs.items())]


# Spark's own defaults for packing files into read tasks (spark.sql.files.maxPartitionBytes,
# spark.sql.files.openCostInBytes)
MAX_TASK_BYTES = 128 << 20
OPEN_COST_BYTES = 4 << 20


def task_groups(tasks: list[dict], parallelism: int) -> list[list[int]]:
    """The runs of `tasks` packed into Spark tasks (lists of indices into `tasks`) the way Spark
    packs files into read partitions (FilePartition.maxSplitBytes and getFilePartitions): a
    split of min(MAX_TASK_BYTES, max(OPEN_COST_BYTES, total / parallelism)) bytes, a run
    costing its files' bytes plus OPEN_COST_BYTES per file, the largest run first and a new
    task whenever the next one would overflow the split. A run is never divided (its files are
    one stream). Many small runs become a few tasks instead of one each, whose fixed cost
    (a Python worker's call, a task's scheduling) outweighed their parse."""
    size = [sum(f["bytes"] for f in t["files"]) for t in tasks]
    opened = [OPEN_COST_BYTES * len(t["files"]) for t in tasks]
    total = sum(size) + sum(opened)
    split = min(MAX_TASK_BYTES, max(OPEN_COST_BYTES, total // max(parallelism, 1)))
    groups: list[list[int]] = []
    current: list[int] = []
    filled = 0
    for i in sorted(range(len(tasks)), key=lambda i: -size[i]):
        if current and filled + size[i] > split:
            groups.append(current)
            current, filled = [], 0
        current.append(i)
        filled += size[i] + opened[i]
    if current:
        groups.append(current)
    return groups


def _file_row(s) -> dict:
    return {
        "file_id": s.file_id,
        "bytes": s.bytes,
        "run_key": s.run_key,
        "path": str(s.input),
        "name": s.name,
        "year": s.year,
        "utc_offset_minutes": s.ctx.utc_offset_minutes,
        "run_date": s.ctx.run_date.isoformat() if s.ctx.run_date else None,
        "start_utc": s.ctx.start_utc.isoformat() if s.ctx.start_utc else None,
    }


PARTS_SCHEMA = pa.schema(
    [("file_id", pa.int64()), ("rows", pa.int64()), ("noise", pa.int64()), ("quarantined", pa.int64())]
)
PARTS_DDL = "file_id long, rows long, noise long, quarantined long"


def _ctx(t: dict) -> ParseContext:
    return ParseContext(
        run_key=t["run_key"],
        year=t["year"],
        utc_offset_minutes=t["utc_offset_minutes"],
        run_date=date.fromisoformat(t["run_date"]) if t["run_date"] else None,
        start_utc=datetime.fromisoformat(t["start_utc"]) if t["start_utc"] else None,
    )


def write_parts_udf(out: dict[str, str], tasks: list[dict], groups: list[list[int]], threads: int = 1):
    """The mapInArrow function over `spark.range(len(groups), numPartitions=len(groups))` (one
    partition per group of runs, task_groups; no shuffle; the task list travels with the
    function): for each run of its group, a task parses the run's staged files as one stream
    and writes the rows itself as Parquet parts (the crate's writer, every column, so a
    folder has one schema) under
    `<out[table]>/run_key=<run>/` for the lines (`maillog`), messages and minutes; it yields
    only per-file counts (rows, noise, quarantined). So no row crosses into the JVM: Spark
    schedules the tasks, the parse and the writes are the very code of the DuckDB landing.
    The folders are store URIs (storage.py) every executor reaches: a local path on one
    machine, an s3a:// URI on a cluster."""

    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import mtabench_maillog

        from ingest.maillog_run import stream_order
        from ingest.parsers.maillog import NOISE, new_parser, parser_blocks
        from ingest.source import FileSource
        from mtabench.engines.spark.storage import Store

        for ids in batches:
            for task in (tasks[i] for g in ids.column("id").to_pylist() for i in groups[g]):
                part = f"run_key={quote(task['run_key'], safe='')}"
                with tempfile.TemporaryDirectory(prefix="mtabench-parse-") as scratch:
                    work = Path(scratch)
                    dirs = {t: _Parts(Store.from_uri(d).child(part), work / t) for t, d in out.items()}
                    files = {int(t["file_id"]): t for t in task["files"]}
                    ctx = _ctx(task["files"][0])
                    srcs = [
                        (fid, FileSource(_local_input(t["path"], work / f"input-{fid}"), t["name"]))
                        for fid, t in files.items()
                    ]
                    messages = mtabench_maillog.Messages()
                    ordered = stream_order(srcs, ctx)
                    for i, (fid, src) in enumerate(ordered):
                        messages.start_file(fid)
                        parser = new_parser(src, _ctx(files[fid]), threads, messages)
                        rows = noise = quarantined = 0
                        for seq, block in enumerate(parser_blocks(parser, src)):
                            if block.rows < block.lines:
                                kinds = [k for _, k, _, _ in block.skipped()]
                                noise += sum(k == NOISE for k in kinds)
                                quarantined += len(kinds) - sum(k == NOISE for k in kinds)
                            if block.rows:
                                rows += dirs["maillog"].write(
                                    f"part-{fid:08d}-{seq:06d}.parquet",
                                    lambda tmp, b=block, f=fid: b.write(tmp, f, True),
                                )
                        last = i == len(ordered) - 1
                        write = messages.finish_write if last else messages.write
                        name = f"part-{fid:08d}.parquet"
                        dirs["maillog_messages"].write(name, lambda tmp, f=fid, w=write: w(tmp, f))
                        if parser.minutes():
                            dirs["maillog_minutes"].write(
                                name, lambda tmp, p=parser, f=fid: p.write_minutes(tmp, f)
                            )
                        yield pa.RecordBatch.from_pylist(
                            [{"file_id": fid, "rows": rows, "noise": noise, "quarantined": quarantined}],
                            schema=PARTS_SCHEMA,
                        )

    return parse


def _local_input(uri: str, scratch: Path) -> Path:
    """The staged input as a local file: itself when local, else a copy in the task's
    scratch folder (the parser reads files)."""
    from mtabench.engines.spark.storage import Store

    staged = Store.from_uri(uri)
    if staged.is_local:
        return Path(staged.path)
    staged.parent.download(staged.name, scratch)
    return scratch


class _Parts:
    """One table's folder for a task: parts are written in place when the store is local,
    else in the task's scratch folder and sent to the store one by one (so a task's disk
    holds one part at a time)."""

    def __init__(self, store, scratch: Path):
        self.store = store
        self.local = Path(store.path) if store.is_local else scratch
        self.local.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, write) -> int:
        """`write(tmp)` then the part appears whole under `name` (a retried task rewrites the
        same names); a write of no rows leaves no part. Returns the rows."""
        final = self.local / name
        n = _atomic(final, write)
        if not self.store.is_local and final.exists():
            self.store.upload(final, name)
            final.unlink()
        return n


def _atomic(final: Path, write) -> int:
    """`write(tmp)` then renamed to `final` (a part appears whole); a write of no rows leaves
    no file. Returns the rows."""
    tmp = final.with_name(f".{final.name}.tmp")
    n = write(str(tmp))
    if Path(tmp).exists():
        os.replace(tmp, final)
    return n
