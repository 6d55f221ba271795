"""A `vmstat -t 1` capture of any size, as procps-ng prints it when piped: the two header lines
again every 20 rows, one row a second with its timestamp. Values vary row to row (drawn once
from a fixed seed); the first row of the file is vmstat's average since boot, as in a real one.

Used by bench/ingest_bench.py (--vmstat-gb) and tests/test_parser_memory.py.
"""

from __future__ import annotations

import gzip
import random
from datetime import datetime, timedelta
from pathlib import Path

GROUPS = (
    "procs -----------memory---------- ---swap-- -----io---- -system-- -------cpu------- "
    "-----timestamp-----\n"
)
COLUMNS = (
    " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st gu"
    "                 UTC\n"
)
HEADER_EVERY = 20  # rows between repeated headers
START = datetime(2026, 11, 21, 22, 0, 0)


def _value_rows(n: int = 997) -> list[str]:
    """`n` rows of values (without the timestamp), each as vmstat aligns them."""
    rnd = random.Random(20261121)
    rows = []
    for _ in range(n):
        us = rnd.randint(0, 95)
        sy = rnd.randint(0, 100 - us)
        wa = rnd.randint(0, 100 - us - sy)
        vals = (
            rnd.randint(0, 40), rnd.randint(0, 6), 0, rnd.randint(18_000_000, 21_000_000),
            rnd.randint(50_000, 60_000), rnd.randint(2_900_000, 3_100_000), 0, 0,
            rnd.randint(0, 5000), rnd.randint(0, 12_000), rnd.randint(500, 5000),
            rnd.randint(600, 17_000), us, sy, 100 - us - sy - wa, wa, 0, 0,
        )  # fmt: skip
        widths = (2, 2, 6, 8, 6, 7, 4, 4, 5, 5, 4, 5, 2, 2, 2, 2, 2, 2)
        rows.append(" ".join(f"{v:>{w}}" for v, w in zip(vals, widths, strict=True)))
    return rows


def build_vmstat(path: Path, size_bytes: int, compress: bool = True) -> tuple[int, int, int]:
    """Write at least `size_bytes` of uncompressed vmstat text to `path` (gzip level 1 if
    `compress`); returns (uncompressed bytes, lines, data rows)."""
    values = _value_rows()
    written = lines = rows = 0
    with gzip.open(path, "wb", compresslevel=1) if compress else path.open("wb") as out:
        day = None
        while written < size_bytes:
            chunk = []
            for _ in range(2000):
                if rows % HEADER_EVERY == 0:
                    chunk += [GROUPS, COLUMNS]
                    lines += 2
                at = START + timedelta(seconds=rows)
                if at.date() != day:
                    day, stamp_day = at.date(), at.strftime("%Y-%m-%d")
                clock = f"{at.hour:02d}:{at.minute:02d}:{at.second:02d}"
                chunk.append(f"{values[rows % len(values)]} {stamp_day} {clock}\n")
                rows += 1
                lines += 1
            data = "".join(chunk).encode()
            out.write(data)
            written += len(data)
    return written, lines, rows
