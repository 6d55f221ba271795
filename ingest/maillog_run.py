"""A run's maillog files landed as one stream: lines, messages and counts per minute in one pass.

The compiled parser (crates/maillog) parses each file's blocks and, in the same pass,
counts each file's lines per minute and assembles the run's messages (crates/maillog
src/assemble.rs: the one definition of a message). The files are fed in time order (the
first time stamp of each; rotated logs before the current one, a drain log after the
run's log), so a message whose lines span files is one message.

Each file's rows land as its Parquet parts (ingest/arrow_landing.py), beside them:

  - `maillog_minutes/file_id=<id>/`: the file's counts per minute;
  - `maillog_messages/file_id=<id>/`: the messages completed while that file was read (the
    rest, at the end of the stream, with the last file), each row naming the file and line
    of its first line (`first_file_id`, `first_line_no`).

A run's maillog files always land together, in the caller's one transaction: a message's
rows depend on every file of the stream.
"""

from __future__ import annotations

import gzip
import os
import uuid
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import mtabench_maillog

from ingest import arrow_landing
from ingest.arrow_landing import _lit
from ingest.ledger import PROVENANCE, LineCounts
from ingest.parsers import maillog
from ingest.parsers.base import ParseContext
from ingest.source import GZIP_MAGIC, FileSource

MESSAGES, MINUTES = "maillog_messages", "maillog_minutes"

LINES_DDL = f"{PROVENANCE}, {maillog.COLUMNS}"

FLUSH_MESSAGES = 50_000  # completed messages written as a part at once: memory stays flat
HEAD = 1 << 16  # bytes read of a file to find its first time stamp


def _year(src: FileSource, ctx: ParseContext) -> int:
    return ctx.year or datetime.fromtimestamp(src.path.stat().st_mtime, UTC).year


def _head(path: Path) -> bytes:
    """The start of the file's text (gzip decompressed, UTF-16 as UTF-8); b"" if unreadable
    (its parse reports why)."""
    try:
        with path.open("rb") as fh:
            if fh.read(2) == GZIP_MAGIC:
                fh.seek(0)
                with gzip.GzipFile(fileobj=fh) as gz:
                    data = gz.read(HEAD)
            else:
                fh.seek(0)
                data = fh.read(HEAD)
            if data[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\0" in data[:64]:
                fh.seek(0)
                data = next(maillog.utf8_blocks(fh), b"")[:HEAD]
            return data
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile, ValueError, maillog.BadInput):
        return b""


def stream_order(files: list[tuple[int, FileSource]], ctx: ParseContext) -> list[tuple[int, FileSource]]:
    """The run's maillog files in time order: by the first time stamp of each (a file
    without one last), then by path."""

    def key(item: tuple[int, FileSource]):
        _, src = item
        first = mtabench_maillog.first_stamp(_head(src.path), _year(src, ctx), int(ctx.utc_offset_minutes))
        return (first is None, first or 0, src.rel_path)

    return sorted(files, key=key)


def _part(d: Path, table: str, file_id: int, stem: str, seq: int) -> tuple[Path, Path]:
    final = arrow_landing.part_path(d, table, file_id, f"{stem}-{seq:06d}.parquet")
    final.parent.mkdir(parents=True, exist_ok=True)
    return final.with_name("." + final.name + ".tmp"), final


def _register(con, file_id: int, table: str, parts: list[tuple[Path, int]]) -> None:
    con.execute(
        f"delete from raw.parquet_files where file_id = {int(file_id)} and table_name = {_lit(table)}"
    )
    if parts:
        values = ", ".join(
            f"({int(file_id)}, {_lit(table)}, {_lit(str(p))}, true, {int(n)})" for p, n in parts
        )
        con.execute(
            f"insert into raw.parquet_files (file_id, table_name, path, all_columns, rows) values {values}"
        )


class FileFailed(Exception):
    """Landing one of the run's files failed (the cause is chained): which one."""

    def __init__(self, file_id: int):
        super().__init__(file_id)
        self.file_id = file_id


def land_run(
    con,
    files: list[tuple[int, FileSource]],
    ctx: ParseContext,
    threads: int = 0,
    digests: dict[int, str] | None = None,
) -> Iterator[tuple[int, LineCounts]]:
    """Land the run's maillog files as one stream (inside the caller's transaction): yields
    (file_id, line counts) per file, in stream order. The views are left to the caller's
    `refresh_views`. With `digests`, the SHA-256 of each file the crate read itself, taken in
    that one read, is put there by file id."""
    d, stem = arrow_landing.store_dir(con), uuid.uuid4().hex[:12]
    messages = mtabench_maillog.Messages()
    seq = 0
    ordered = stream_order(files, ctx)
    for i, (fid, src) in enumerate(ordered):
        try:
            counts = _land_file(con, d, stem, seq, fid, src, ctx, threads, messages, i == len(ordered) - 1)
            if digests is not None and counts[2] is not None:
                digests[fid] = counts[2]
        except Exception as exc:
            raise FileFailed(fid) from exc
        seq = counts[1]
        yield fid, counts[0]


def _land_file(
    con,
    d: Path,
    stem: str,
    seq: int,
    fid: int,
    src: FileSource,
    ctx: ParseContext,
    threads: int,
    messages,
    last: bool,
) -> tuple[LineCounts, int, str | None]:
    """One file of the stream: its lines, the messages completed meanwhile (all the open
    ones after the `last` file) and its counts per minute. Returns (line counts, next part
    sequence number, the SHA-256 taken in the crate's read of a plain file)."""
    messages.start_file(fid)
    parser = maillog.new_parser(src, ctx, threads, messages)
    written: list[tuple[Path, int]] = []

    def flushed(blocks, fid=fid, written=written):
        # runs in the landing's loop, or its prefetch thread: parts are files, registered below
        nonlocal seq
        for block in blocks:
            yield block
            del block  # not held while the next one is awaited (memory stays flat)
            if messages.emitted >= FLUSH_MESSAGES:
                tmp, final = _part(d, MESSAGES, fid, stem, seq)
                seq += 1
                n = messages.write(str(tmp))
                os.replace(tmp, final)
                written.append((final, n))

    digest: dict[str, str] = {}
    blocks = flushed(maillog.parser_blocks(parser, src, digest))
    streamed = maillog.read_by_crate(src.path)
    counts = arrow_landing.land(con, fid, "maillog", LINES_DDL, blocks, view=False, streamed=streamed)
    tmp, final = _part(d, MESSAGES, fid, stem, seq)
    seq += 1
    n = messages.finish_write(str(tmp)) if last else messages.write(str(tmp))
    if n:
        os.replace(tmp, final)
        written.append((final, n))
    _register(con, fid, MESSAGES, written)
    minutes = []
    if parser.minutes():
        tmp, final = _part(d, MINUTES, fid, stem, seq)
        seq += 1
        minutes.append((final, parser.write_minutes(str(tmp), fid)))
        os.replace(tmp, final)
    _register(con, fid, MINUTES, minutes)
    return counts, seq, digest.get("sha256")
