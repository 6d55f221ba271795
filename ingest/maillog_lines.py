"""Maillog files staged for the Spark parse.

`mtabench ingest --parquet` (and `run --engine spark`) copies, beside the Parquet landing,
each maillog as it was read (plain or gzip) with the parse context the file needs (base
year, UTC offset, run date) in a sidecar JSON:

    <landing>/maillog_lines/run_key=<run>/file_id=<id>/input + context.json

The Spark engine parses these in its executors with the same compiled parser the DuckDB
landing uses (mapInArrow, mtabench/engines/spark/engine.py), instead of reading the DuckDB-parsed
rows, so on a cluster the heavy part of the maillog ingest is Spark's.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import quote

from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import count_lines_file
from ingest.source import FileSource

FOLDER = "maillog_lines"


@dataclass(frozen=True)
class StagedLines:
    file_id: int
    run_key: str
    sha256: str
    lines: int
    year: int
    input: Path
    name: str
    ctx: ParseContext
    bytes: int = 0  # the staged input's size: how Spark's parse packs runs into tasks


def _dir(root: Path, run_key: str, file_id: int) -> Path:
    return root / FOLDER / f"run_key={quote(run_key, safe='')}" / f"file_id={file_id}"


def is_staged(root: Path, run_key: str, file_id: int, sha256: str) -> bool:
    side = _dir(root, run_key, file_id) / "context.json"
    return side.exists() and json.loads(side.read_text())["sha256"] == sha256


def stage(root: Path, src: FileSource, file_id: int, sha256: str, ctx: ParseContext) -> int:
    """Write the file's lines and context (atomically: a half-written folder is never read)."""
    final = _dir(root, ctx.run_key, file_id)
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copyfile(src.path, tmp / "input")
    n = count_lines_file(tmp / "input")
    # the same base year land() uses for year-less stamps
    year = ctx.year or datetime.fromtimestamp(src.path.stat().st_mtime, UTC).year
    side = {
        "file_id": file_id,
        "run_key": ctx.run_key,
        "path": src.rel_path,
        "name": Path(src.rel_path).name,
        "sha256": sha256,
        "lines": n,
        "year": year,
        "utc_offset_minutes": ctx.utc_offset_minutes,
        "run_date": ctx.run_date.isoformat() if ctx.run_date else None,
        "start_utc": ctx.start_utc.isoformat() if ctx.start_utc else None,
    }
    (tmp / "context.json").write_text(json.dumps(side, indent=1))
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    return n


def staged(root: Path) -> list[StagedLines]:
    out = []
    for side in sorted((root / FOLDER).glob("run_key=*/file_id=*/context.json")):
        d = json.loads(side.read_text())
        ctx = ParseContext(
            run_key=d["run_key"],
            year=d["year"],
            run_date=date.fromisoformat(d["run_date"]) if d["run_date"] else None,
            start_utc=datetime.fromisoformat(d["start_utc"]) if d["start_utc"] else None,
            utc_offset_minutes=d["utc_offset_minutes"],
        )
        out.append(
            StagedLines(
                d["file_id"],
                d["run_key"],
                d["sha256"],
                d["lines"],
                d["year"],
                side.parent / "input",
                d.get("name", "input"),
                ctx,
                (side.parent / "input").stat().st_size,
            )
        )
    return out
