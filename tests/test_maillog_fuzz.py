"""The parser never crashes and never loses a line, on arbitrary bytes and mutated real lines."""

from __future__ import annotations

import gzip
import io

from conftest import SAMPLES
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import parse_stream, read_blocks

_REAL = [
    ln
    for p in sorted(SAMPLES.glob("runs/*/maillog*.gz"))
    for ln in gzip.decompress(p.read_bytes()).split(b"\n")[:300]
    if ln
]
_TOKENS = [
    b": ",
    b" ",
    b",",
    b"<",
    b">",
    b"[",
    b"]",
    b":",
    b"(",
    b")",
    b"=",
    b"/",
    b"\r",
    b"\x00",
    b"\xff",
    b"\n",
]


def _lines_in(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def _check(data: bytes, block: int) -> None:
    """Rows + noise + quarantine == lines, line numbers 1..n exactly once, in any block size."""
    ctx = ParseContext(year=2026, utc_offset_minutes=-90)
    numbers: list[int] = []
    for batches in parse_stream(read_blocks(io.BytesIO(data), block), 2026, ctx, threads=2):
        for b in batches:
            numbers += b.column("line_no").to_pylist()
            assert b.column("kind").null_count == 0
    assert numbers == list(range(1, _lines_in(data) + 1))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=3000), st.integers(min_value=1, max_value=4096))
def test_arbitrary_bytes(data, block):
    assume(not data.startswith(b"\x1f\x8b"))  # gzip magic: a file-level BadInput, tested in test_ingest
    _check(data, block)


@st.composite
def mutated(draw) -> bytes:
    lines = draw(st.lists(st.sampled_from(_REAL), min_size=1, max_size=30))
    out = []
    for ln in lines:
        m = bytearray(ln)
        for _ in range(draw(st.integers(0, 4))):
            i = draw(st.integers(0, len(m)))
            op = draw(st.integers(0, 2))
            if op == 0:
                del m[i : i + draw(st.integers(1, 8))]
            elif op == 1:
                m[i:i] = draw(st.sampled_from(_TOKENS))
            else:
                m = m[:i]
        out.append(bytes(m))
    return b"\n".join(out) + draw(st.sampled_from([b"", b"\n", b"\r\n"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(), st.integers(min_value=1, max_value=1 << 16))
def test_mutated_real_lines(data, block):
    _check(data, block)
