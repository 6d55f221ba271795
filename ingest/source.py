"""Reading one raw file: decompression, binary detection and decoding, each failing clearly."""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

GZIP_MAGIC = b"\x1f\x8b"
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
            self._data = raw
        return self._data

    def head(self, n: int = 65536) -> bytes:
        if self.is_gzip:
            try:
                with gzip.open(self.path, "rb") as fh:
                    return fh.read(n)
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                raise BadInput(f"corrupt or truncated gzip: {exc}") from exc
        if self.rel_path.endswith(".gz"):
            raise BadInput("named .gz but is not gzip data")
        with self.path.open("rb") as fh:
            return fh.read(n)

    def lines(self) -> Iterator[tuple[int, str]]:
        """(line_no, text) with 1-based numbers; a trailing CR is kept for the parser to see."""
        data = self.data()
        if looks_binary(data[:65536]):
            raise BadInput("binary content (NUL bytes or mostly non-text)")
        for no, raw in enumerate(split_lines(data), start=1):
            yield no, self.decode(raw)

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


def count_lines(data: bytes) -> int:
    return len(split_lines(data))


def looks_binary(sample: bytes) -> bool:
    if not sample:
        return False
    if b"\x00" in sample:
        return True
    text_bytes = bytes(range(32, 127)) + b"\t\n\r\f\b\x1b"
    # High bytes count as text (UTF-8/GB18030); only C0 controls are suspicious.
    control = sum(1 for b in sample if b < 32 and b not in text_bytes)
    return control / len(sample) > 0.05
