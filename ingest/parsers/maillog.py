"""Mail logs (Postfix, Sendmail, Exim, OpenSMTPD, qmail/multilog, Courier, Dovecot) parsed by the compiled
parser in crates/maillog (Python module `mtabench_maillog`).

Every line of the file becomes exactly one row: a `raw.maillog` row (kind says what it
was; `other` keeps program and text of shapes we do not know), a `raw.noise` row (blank
lines, syslog `-- MARK --` and `message repeated` lines) or a `raw.quarantine` row (not a
log line at all, or bytes that are not UTF-8). The parser returns all of them as Arrow
record batches, noise and quarantine lines with kind `__noise` / `__quarantine` (detail =
noise kind or reason, message = the whole line); the landing splits them.

The file is streamed in blocks (BLOCK bytes of plain text, gzip decompressed on the
fly; the landing has the crate read a plain file itself); each block is parsed in
parallel on line boundaries in Rust with the GIL released, so memory stays flat whatever
the file size. The same function runs in Spark executors
(mtabench/engines/spark/engine.py), so both engines parse with the very same code.

Timestamps: classic syslog (`Nov  1 22:04:34`, day space-padded), postlogd (`Nov 01`),
RFC 3339 (own offset), Exim (`YYYY-MM-DD HH:MM:SS [+zzzz]`) and TAI64N (`@4000...`).
Year-less stamps take ctx.year (else the file's mtime year) and roll over at New Year
(carried across chunks and blocks); local stamps become UTC with ctx.utc_offset_minutes
(local = UTC + offset).
"""

from __future__ import annotations

import codecs
import gzip
import itertools
import re
import zlib
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import mtabench_maillog

from ingest.ledger import Ledger
from ingest.parsers.base import ParseContext, Parser
from ingest.source import GZIP_MAGIC, UTF16_BOMS, BadInput, content_kind

if TYPE_CHECKING:
    import pyarrow as pa

# bytes of plain text parsed at a time (one Parquet part). Each stage of the stream holds one
# block: at 8 MB the whole ingest peaks ~90 MB lower than at 16 MB, and runs no slower
# (bench/RESULTS.md)
BLOCK = 8 << 20

_SQL_TYPES = {"timestamp": "TIMESTAMP", "int32": "INTEGER", "int64": "BIGINT", "float64": "DOUBLE"}
_ALL = mtabench_maillog.columns()  # [(name, arrow type)], line_no first
COLUMN_NAMES = [n for n, _ in _ALL[1:]]
COLUMNS = ", ".join(f"{n} {_SQL_TYPES.get(t, 'VARCHAR')}" for n, t in _ALL[1:])
NOISE, QUARANTINE = "__noise", "__quarantine"


_MAIL_PROGRAMS = (
    # the mailbox side's servers too: a Dovecot-only or Courier-only log is a maillog
    r"(?P<prog>postfix[^\[:\s]*|sendmail|sm-mta|sm-msp-queue|exim4?|smtpd|dovecot|(?:pop3|imap)d(?:-ssl)?"
    r"|courierpop3login|imaplogin|courier(?:d|local|esmtpd?|dsn))"
)
_SNIFF_SYSLOG = re.compile(
    r"^(?:[A-Z][a-z]{2} [ 0-9]?\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) \S+ "
    + _MAIL_PROGRAMS
    + r"(?:\[\d+\])?: "
    # RFC 5424 (rsyslog's RSYSLOG_SyslogProtocol23Format): `<PRI>1 STAMP HOST APP PROCID MSGID SD MSG`
    + r"|^<\d{1,3}>1 \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S* \S+ "
    + _MAIL_PROGRAMS.replace("?P<prog>", "?:")
    + r" \S+ \S+ (?:-|\[)",
    re.M,
)
# `journalctl -o json`: one object per line, a mail program's SYSLOG_IDENTIFIER in it
_SNIFF_JOURNAL = re.compile(
    r'^\{.*"__REALTIME_TIMESTAMP"\s*:.*$',
    re.M,
)
_JOURNAL_MAIL_PROGRAM = re.compile(
    r'"SYSLOG_IDENTIFIER"\s*:\s*"(?:postfix[^"]*|sendmail|sm-mta|exim4?|dovecot|opendkim)"'
)
_SNIFF_EXIM = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [+-]\d{4})?(?: \[\d+\])? "
    r"(?:[0-9A-Za-z]{6}-[0-9A-Za-z]{6,11}-[0-9A-Za-z]{2,4} (?:<=|=>|->|\*\*|==|Completed)"
    r"|Start queue run|End queue run|exim \S+ daemon started|Connection from \[[^\]]+\](?::\d+)? refused)",
    re.M,
)
_SNIFF_QMAIL = re.compile(
    # qmail-send's log, or qmail-smtpd's: `tcpserver -v` in front of it; multilog's stamp, or
    # the local time `tai64nlocal` made of it
    r"^(?:@4000[0-9a-f]{20}|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) "
    r"(?:new msg|info msg|starting delivery|delivery \d+|end msg|status:|tcpserver: )",
    re.M,
)
# Dovecot's own log file (`log_path`): a stamp, then the process's prefix and a level, no host
_SNIFF_DOVECOT_OWN = re.compile(
    r"^(?:[A-Z][a-z]{2} [ 0-9]?\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) "
    r"(?:(?:pop3|imap|lmtp|lda|managesieve|submission)(?:-login)?|auth(?:-worker)?|master)"
    r"(?:\([^)]*\))?(?:<[^>]*>)*: (?:Info|Warning|Error|Fatal|Panic): ",
    re.M,
)


def arrow_schema() -> pa.Schema:
    import pyarrow as pa

    types = {
        "timestamp": pa.timestamp("us"),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "string": pa.string(),
    }
    return pa.schema([(n, types[t]) for n, t in _ALL])


_NULLS: dict[pa.DataType, pa.Array] = {}


def _nulls(n: int, typ: pa.DataType) -> pa.Array:
    """An all-null array of n rows: a slice of one cached array per type (most columns are
    all null in most chunks; fresh ones cost an allocation and a page fault each)."""
    import pyarrow as pa

    have = _NULLS.get(typ)
    if have is None or len(have) < n:
        have = _NULLS[typ] = pa.nulls(max(n, 1 << 18), typ)
    return have.slice(0, n)


def _batch(n: int, cols: list, schema: pa.Schema) -> pa.RecordBatch:
    """Arrow arrays straight over the Rust buffers (no copy)."""
    import pyarrow as pa

    arrays = []
    for (_name, _t, nulls, valid, offsets, data), field in zip(cols, schema, strict=True):
        if data is None:  # no line of the chunk set this column
            arrays.append(_nulls(n, field.type))
            continue
        bufs = [pa.py_buffer(valid) if valid is not None else None]
        if offsets is not None:
            bufs.append(pa.py_buffer(offsets))
        bufs.append(pa.py_buffer(data))
        arrays.append(pa.Array.from_buffers(field.type, n, bufs, null_count=nulls))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _ref_month(ctx: ParseContext) -> int:
    ref = ctx.start_utc or ctx.run_date
    return ref.month if ref is not None else 0


def parse_stream(
    blocks: Iterable[bytes], year: int, ctx: ParseContext, threads: int = 0
) -> Iterator[list[pa.RecordBatch]]:
    """Record batches per block of input bytes (lines may span blocks)."""
    schema = arrow_schema()
    p = mtabench_maillog.Parser(year, int(ctx.utc_offset_minutes), _ref_month(ctx), threads)
    for block in blocks:
        out = [_batch(n, cols, schema) for n, cols in p.feed(block)]
        if out:
            yield out
    out = [_batch(n, cols, schema) for n, cols in p.finish()]
    if out:
        yield out


def parse_blocks(blocks: Iterable[bytes], year: int, ctx: ParseContext, threads: int = 0) -> Iterator:
    """As parse_stream, but each block's rows stay in Rust (`mtabench_maillog.Block`) and
    are written as a Parquet part by the crate itself (the landing's fast path)."""
    p = mtabench_maillog.Parser(year, int(ctx.utc_offset_minutes), _ref_month(ctx), threads)
    yield from _fed(p, blocks)


def _fed(p, blocks: Iterable[bytes]) -> Iterator:
    """Parser `p`'s Rust `Block`s of text blocks (lines may span them), the last line too."""
    for block in blocks:
        out = p.feed_block(block)
        if out is not None:
            yield out
    out = p.finish_block()
    if out is not None:
        yield out


def new_parser(src, ctx: ParseContext, threads: int = 0, messages=None):
    """The compiled parser of one file (`src`: a FileSource): year-less stamps take the run's
    year, else the file's mtime year; with `messages` (a `mtabench_maillog.Messages`) it
    assembles the run's messages as it parses (ingest/maillog_run.py)."""
    year = ctx.year or datetime.fromtimestamp(Path(src.path).stat().st_mtime, UTC).year
    return mtabench_maillog.Parser(year, int(ctx.utc_offset_minutes), _ref_month(ctx), threads, messages)


def parser_blocks(p, src, digest: dict | None = None) -> Iterator:
    """The file's parsed blocks (`mtabench_maillog.Block`, each writes its own Parquet part)
    from parser `p`: a plain file read by the crate itself, gzip and UTF-16 through Python.
    With `digest`, a plain file's SHA-256, taken in that one read, is put there as
    `digest["sha256"]` once the last block was given."""
    path = Path(src.path)
    with path.open("rb") as fh:
        head = fh.read(65536)
        if src.rel_path.endswith(".gz") and head[:2] != GZIP_MAGIC:
            raise BadInput("named .gz but is not gzip data")
        if not _plain(head):
            fh.seek(0)
            yield from _fed(p, utf8_blocks(fh))
            return
    yield from _read_plain(p, path, digest)


def _plain(head: bytes) -> bool:
    """Whether a file starting with `head` is read by the crate itself (not gzip, not UTF-16)."""
    return head[:2] != GZIP_MAGIC and not content_kind(head).startswith("utf-16")


def read_by_crate(path: Path) -> bool:
    """Whether parser_blocks has the crate read the file (and so can hash it in that read)."""
    try:
        with Path(path).open("rb") as fh:
            return _plain(fh.read(65536))
    except OSError:
        return False


def read_file_blocks(path: Path, year: int, ctx: ParseContext, threads: int = 0) -> Iterator:
    """As parse_blocks over a plain (not gzip) file, the crate reading the file itself:
    each block is read straight into a buffer the parser reuses (no bytes object, no copy)."""
    p = mtabench_maillog.Parser(year, int(ctx.utc_offset_minutes), _ref_month(ctx), threads)
    yield from _read_plain(p, path)


def _read_plain(p, path: Path, digest: dict | None = None) -> Iterator:
    """The crate's threads read, hash, parse and count the file (Parser.stream)."""
    with Path(path).open("rb", buffering=0) as raw:
        stream = p.stream(raw.fileno(), BLOCK)
    while (block := stream.next()) is not None:
        yield block
        del block  # not held while the next one is awaited (memory stays flat)
    if digest is not None:
        digest["sha256"] = stream.sha256


def read_blocks(fh: BinaryIO, size: int = BLOCK) -> Iterator[bytes]:
    """Plain-text blocks of a plain or gzip file object (gzip decompressed incrementally)."""
    head = fh.read(2)
    fh.seek(0)
    if head != GZIP_MAGIC:
        while chunk := fh.read(size):
            yield chunk
        return
    try:
        with gzip.GzipFile(fileobj=fh) as gz:
            while chunk := gz.read(size):
                yield chunk
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise BadInput(f"corrupt or truncated gzip: {exc}") from exc


def file_batches(path: Path, name: str, ctx: ParseContext, threads: int = 0, arrow: bool = True) -> Iterator:
    """Record batches of a maillog file, one list per block (`arrow=False`: one Rust
    `Block` per block instead, for the landing's Parquet parts)."""
    year = ctx.year or datetime.fromtimestamp(Path(path).stat().st_mtime, UTC).year
    with Path(path).open("rb") as fh:
        head = fh.read(65536)
        if name.endswith(".gz") and head[:2] != GZIP_MAGIC:
            raise BadInput("named .gz but is not gzip data")
        fh.seek(0)
        if not arrow and head[:2] != GZIP_MAGIC and not content_kind(head).startswith("utf-16"):
            yield from read_file_blocks(path, year, ctx, threads)
            return
        parse = parse_stream if arrow else parse_blocks
        yield from parse(utf8_blocks(fh), year, ctx, threads)


def utf8_blocks(fh: BinaryIO) -> Iterator[bytes]:
    """read_blocks as the parser reads them: UTF-16 text (a BOM, or NULs in every other byte,
    as detection reads it) re-encoded as UTF-8 block by block; anything else as it is."""
    blocks = read_blocks(fh)
    first = next(blocks, b"")
    kind = content_kind(first[:65536])
    blocks = itertools.chain([first], blocks)
    yield from utf16_as_utf8(blocks, kind) if kind.startswith("utf-16") else blocks


def utf16_as_utf8(blocks: Iterable[bytes], kind: str) -> Iterator[bytes]:
    """UTF-16 blocks as UTF-8 blocks (a BOM decides the byte order, else `kind`); text that
    does not decode refuses the file, as FileSource.data() does."""
    decoder = None
    for block in blocks:
        if decoder is None:
            encoding = "utf-16" if block[:2] in UTF16_BOMS else kind
            decoder = codecs.getincrementaldecoder(encoding)("strict")
        try:
            text = decoder.decode(block)
        except UnicodeDecodeError as exc:
            raise BadInput(f"UTF-16 text that does not decode: {exc}") from exc
        if text:
            yield text.encode("utf-8", "surrogatepass")
    if decoder is not None:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            raise BadInput(f"UTF-16 text that does not decode: {exc}") from exc


class MaillogParser(Parser):
    format = "maillog"
    # 2.1: Courier POP3/IMAP lines, Dovecot IMAP fetch counters; 2.2: parts with every column;
    # 2.3: real-lines corpus shapes (bare `to=` addresses, `tls=` in deliveries, hyphenated
    # statuses, Dovecot 1.x and prefix-less sessions, ...), known programs' `other` lines counted;
    # 3.0: `counts_as` per line, a run's messages and each file's minutes in the parse pass
    version = "3.0.0"
    tables = {"maillog": COLUMNS}
    # landed with the lines, in the same pass (ingest/maillog_run.py)
    derived_tables = {
        # file_id: the file whose part lists the message (read while it was completed)
        "maillog_messages": "file_id BIGINT, "
        + ", ".join(f"{n} {_SQL_TYPES.get(t, 'VARCHAR')}" for n, t in mtabench_maillog.message_columns()),
        "maillog_minutes": (
            "file_id BIGINT, minute_at TIMESTAMP, lines BIGINT, received BIGINT, delivered BIGINT, "
            "deferred BIGINT, bounced BIGINT, rejected BIGINT"
        ),
    }

    def sniff(self, head: str, name: str) -> int:
        lines = [ln for ln in head.splitlines()[:200] if ln.strip()]
        if not lines:
            return 0
        sample = "\n".join(lines)
        hits = sum(1 for _ in _SNIFF_SYSLOG.finditer(sample)) + sum(1 for _ in _SNIFF_EXIM.finditer(sample))
        hits += sum(1 for _ in _SNIFF_QMAIL.finditer(sample))
        hits += sum(1 for _ in _SNIFF_DOVECOT_OWN.finditer(sample))
        hits += sum(1 for m in _SNIFF_JOURNAL.finditer(sample) if _JOURNAL_MAIL_PROGRAM.search(m.group()))
        share = hits / len(lines)
        if share >= 0.5:
            return 95
        if share > 0.1:
            return 80
        if hits and re.search(r"(?:mail|maillog|main)\.?log|maillog", name.lower()):
            return 60
        return 0

    def record_batches(self, path: Path, name: str, ctx: ParseContext) -> Iterator[list[pa.RecordBatch]]:
        """Bulk path (the landing uses it): per block, the parsed lines as a Rust `Block`
        that writes its own Parquet part (arrow_landing.land takes Arrow batches too)."""
        return file_batches(path, name, ctx, arrow=False)

    def parse(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Ledger:
        """Per-line view (`mtabench parse maillog`): the same parse, one ledger item per line."""
        pairs = list(lines)
        data = b"".join(t.rstrip("\r\n").encode("utf-8", "surrogateescape") + b"\n" for _, t in pairs)
        year = ctx.year or datetime.now(UTC).year
        ledger = Ledger()
        numbers = [n for n, _ in pairs]
        for batches in parse_stream([data], year, ctx, threads=1):
            for b in batches:
                for rec in b.to_pylist():
                    line_no = numbers[rec.pop("line_no") - 1]
                    kind = rec["kind"]
                    if kind == NOISE:
                        ledger.add_noise(line_no, 0, rec["detail"], rec["message"])
                    elif kind == QUARANTINE:
                        ledger.add_quarantine(line_no, 0, rec["detail"], rec["message"])
                    else:
                        fields = {
                            k: (v.isoformat(sep=" ") if isinstance(v, datetime) else v)
                            for k, v in rec.items()
                            if k in COLUMN_NAMES
                        }
                        ledger.add("maillog", line_no, 0, **fields)
        return ledger


def count_lines_file(path: Path) -> int:
    """Lines of a plain or gzip file as the parser counts them (a last line without newline counts)."""
    n, last = 0, b"\n"
    with Path(path).open("rb") as fh:
        for block in utf8_blocks(fh):
            n += block.count(b"\n")
            last = block[-1:]
    return n + (0 if last == b"\n" else 1)
