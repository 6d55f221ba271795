"""The maillog parse as a Spark mapInArrow function: one task per staged file, the very
parser and Parquet writer the DuckDB landing runs (ingest/parsers/maillog.py over
crates/maillog)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import date, datetime
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa

from ingest.parsers.base import ParseContext


def task_rows(staged: list) -> list[dict]:
    """One dict per staged file (ingest.maillog_lines.StagedLines): what its task needs."""
    return [
        {
            "file_id": s.file_id,
            "run_key": s.run_key,
            "path": str(s.input),
            "name": s.name,
            "year": s.year,
            "utc_offset_minutes": s.ctx.utc_offset_minutes,
            "run_date": s.ctx.run_date.isoformat() if s.ctx.run_date else None,
            "start_utc": s.ctx.start_utc.isoformat() if s.ctx.start_utc else None,
        }
        for s in staged
    ]


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


def write_parts_udf(out: str, tasks: list[dict], threads: int = 1):
    """The mapInArrow function over `spark.range(len(tasks), numPartitions=len(tasks))` (one
    partition per file, no shuffle; the task list travels with the function): each task
    parses its staged file and writes the rows itself
    as Parquet parts (the crate's writer, every column, so the folder has one schema) under
    `<out>/run_key=<run>/`; it yields only per-file counts (rows, noise, quarantined). So
    no row crosses into the JVM: Spark schedules the tasks, the parse and the write are the
    very code of the DuckDB landing. `out` must be a path the executors can write."""

    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from ingest.parsers.maillog import NOISE, file_batches

        for ids in batches:
            for t in (tasks[i] for i in ids.column("id").to_pylist()):
                fid = int(t["file_id"])
                d = Path(out) / f"run_key={quote(t['run_key'], safe='')}"
                d.mkdir(parents=True, exist_ok=True)
                rows = noise = quarantined = 0
                for seq, block in enumerate(
                    file_batches(Path(t["path"]), t["name"], _ctx(t), threads, False)
                ):
                    if block.rows < block.lines:
                        kinds = [k for _, k, _, _ in block.skipped()]
                        noise += sum(k == NOISE for k in kinds)
                        quarantined += len(kinds) - sum(k == NOISE for k in kinds)
                    if block.rows:
                        # a retried task rewrites the same names; a part appears whole (rename)
                        final = d / f"part-{fid:08d}-{seq:06d}.parquet"
                        tmp = d / f".{final.name}.tmp"
                        rows += block.write(str(tmp), fid, True)
                        os.replace(tmp, final)
                yield pa.RecordBatch.from_pylist(
                    [{"file_id": fid, "rows": rows, "noise": noise, "quarantined": quarantined}],
                    schema=PARTS_SCHEMA,
                )

    return parse
