"""Reading one raw file: decompression, binary detection and decoding, each failing clearly."""

from __future__ import annotations

import codecs
import gzip
import hashlib
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"
BLOCK = 1 << 20  # bytes read (or decompressed) at a time by lines()
# Encodings tried in order for bytes that are not UTF-8 (seed 000 is Chinese; GB18030 covers GBK).
FALLBACK_ENCODINGS = ("gb18030", "latin-1")


class BadInput(Exception):
    """The file as a whole cannot be read; the message says why."""


@dataclass
class FileSource:
    path: Path  # where the bytes are on disk (after bundle extraction)
    rel_path: str  # archive-relative name shown to users and stored as provenance
    _data: bytes | None = field(default=None, repr=False)
    encoding: str = "utf-8"

    @property
    def is_gzip(self) -> bool:
        with self.path.open("rb") as fh:
            return fh.read(2) == GZIP_MAGIC

    def sha256(self) -> str:
        h = hashlib.sha256()
        with self.path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()

    def data(self) -> bytes:
        """Decompressed bytes; raises BadInput for truncated/corrupt gzip or a lying .gz name."""
        if self._data is None:
            raw = self.path.read_bytes()
            if raw[:2] == GZIP_MAGIC:
                try:
                    raw = gzip.decompress(raw)
                except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                    raise BadInput(f"corrupt or truncated gzip: {exc}") from exc
            elif self.rel_path.endswith(".gz"):
                raise BadInput("named .gz but is not gzip data")
            self._data = self._as_utf8(raw, whole=True)
        return self._data

    def _as_utf8(self, raw: bytes, whole: bool) -> bytes:
        """UTF-16 text becomes UTF-8 (lines split on LF, as everywhere); binary is refused."""
        kind = content_kind(raw[:65536])
        if kind == "binary":
            raise BadInput("binary content (mostly non-text bytes): not a benchmark text output")
        if kind.startswith("utf-16"):
            body = raw if whole else raw[: len(raw) // 2 * 2]
            try:
                text = body.decode(
                    "utf-16" if body[:2] in UTF16_BOMS else kind, "strict" if whole else "replace"
                )
            except UnicodeDecodeError as exc:
                raise BadInput(f"UTF-16 text that does not decode: {exc}") from exc
            self.encoding = kind
            return text.encode("utf-8")
        return raw

    def head(self, n: int = 65536) -> bytes:
        if self.is_gzip:
            try:
                with gzip.open(self.path, "rb") as fh:
                    return self._as_utf8(fh.read(n), whole=False)
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise BadInput(f"corrupt or truncated gzip: {exc}") from exc
        if self.rel_path.endswith(".gz"):
            raise BadInput("named .gz but is not gzip data")
        with self.path.open("rb") as fh:
            return self._as_utf8(fh.read(n), whole=False)

    def lines(self) -> Iterator[tuple[int, str]]:
        """(line_no, text) with 1-based numbers; a trailing CR is kept for the parser to see.

        Read incrementally (a block at a time, gzip decompressed as it goes): memory does not
        grow with the file. The same lines as split_lines(data()): binary refused, UTF-16
        decoded, stray control bytes kept for the line; a bad gzip or UTF-16 stream raises
        BadInput where it is met."""
        if self._data is not None:
            for no, raw in enumerate(split_lines(self._data), start=1):
                yield no, self.decode(raw)
            return
        for no, raw in enumerate(_split_stream(self._utf8_blocks()), start=1):
            yield no, self.decode(raw)

    def _raw_blocks(self) -> Iterator[bytes]:
        """The file's bytes block by block, gunzipped if gzip."""
        with self.path.open("rb") as fh:
            if fh.read(2) != GZIP_MAGIC:
                if self.rel_path.endswith(".gz"):
                    raise BadInput("named .gz but is not gzip data")
                fh.seek(0)
                while block := fh.read(BLOCK):
                    yield block
                return
            fh.seek(0)
            try:
                with gzip.GzipFile(fileobj=fh) as gz:
                    while block := gz.read(BLOCK):
                        yield block
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise BadInput(f"corrupt or truncated gzip: {exc}") from exc

    def _utf8_blocks(self) -> Iterator[bytes]:
        """_raw_blocks as UTF-8 (UTF-16 re-encoded), the content kind decided on the first
        64 KiB as data() decides it on the whole."""
        blocks = self._raw_blocks()
        first = b""
        for block in blocks:
            first += block
            if len(first) >= 65536:
                break
        kind = content_kind(first[:65536])
        if kind == "binary":
            raise BadInput("binary content (mostly non-text bytes): not a benchmark text output")
        if not kind.startswith("utf-16"):
            if first:
                yield first
            yield from blocks
            return
        self.encoding = kind
        decoder = codecs.getincrementaldecoder("utf-16" if first[:2] in UTF16_BOMS else kind)("strict")
        try:
            yield decoder.decode(first).encode("utf-8")
            for block in blocks:
                yield decoder.decode(block).encode("utf-8")
            yield decoder.decode(b"", final=True).encode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadInput(f"UTF-16 text that does not decode: {exc}") from exc

    def decode(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            for enc in FALLBACK_ENCODINGS:
                try:
                    text = raw.decode(enc)
                except UnicodeDecodeError:
                    continue
                self.encoding = f"utf-8+{enc}"
                return text
            raise  # latin-1 never fails; kept for type checkers


def split_lines(data: bytes) -> list[bytes]:
    """Split on LF only (CR stays: postal replies keep their CRLF); no phantom last line."""
    if not data:
        return []
    parts = data.split(b"\n")
    if parts[-1] == b"":
        parts.pop()
    return parts


def _split_stream(blocks: Iterator[bytes]) -> Iterator[bytes]:
    """split_lines over a stream of blocks: LF only, no phantom last line."""
    rest: list[bytes] = []  # the line begun and not yet ended (a long line: many blocks)
    for block in blocks:
        if b"\n" not in block:
            rest.append(block)
            continue
        parts = block.split(b"\n")
        parts[0] = b"".join([*rest, parts[0]])
        rest = [parts.pop()]
        yield from parts
    if last := b"".join(rest):
        yield last


def count_lines(data: bytes) -> int:
    return len(split_lines(data))


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
TEXT_CONTROLS = frozenset(b"\t\n\r\f\b\x1b")


def content_kind(sample: bytes) -> str:
    """'text', 'utf-16-le', 'utf-16-be' or 'binary', decided on the content of `sample`.

    A stray NUL or control byte does not make a text file binary (those lines are
    quarantined); only a sample where more than 5 % of bytes are C0 controls does. UTF-16
    shows as a BOM or as NULs in every other byte, and is decoded, not called binary."""
    if not sample:
        return "text"
    if sample[:2] == b"\xff\xfe":
        return "utf-16-le"
    if sample[:2] == b"\xfe\xff":
        return "utf-16-be"
    even, odd = sample[0::2], sample[1::2]
    if len(sample) >= 4:
        if odd.count(0) > 0.4 * len(odd) and even.count(0) < 0.05 * len(even):
            return "utf-16-le"
        if even.count(0) > 0.4 * len(even) and odd.count(0) < 0.05 * len(odd):
            return "utf-16-be"
    control = sum(1 for b in sample if b < 32 and b not in TEXT_CONTROLS)
    return "binary" if control / len(sample) > 0.05 else "text"


def looks_binary(sample: bytes) -> bool:
    return content_kind(sample) == "binary"
