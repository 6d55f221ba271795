"""Does a file's landing cost grow with the landing? (the goal: ingest seconds per run flat in size)

    uv run --frozen python bench/landing_growth_bench.py [--files 2000]

Lands one small sample maillog --files times under new file ids into a fresh DuckDB file,
each in its own transaction as the loader does, twice: (a) rebuilding raw.maillog's view
after every file (what the loader did before), (b) with `view=False` and one
`refresh_views` at the end (the loader now). Prints ms per file for the first and the last
10 % of the files and their ratio; flat is a ratio near 1. Figures only, no assertion.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

from ingest.landing import ensure_schema, land_file, refresh_views  # noqa: E402
from ingest.parsers.base import ParseContext  # noqa: E402
from ingest.parsers.maillog import MaillogParser  # noqa: E402
from ingest.source import FileSource  # noqa: E402

SAMPLE = ROOT / "tests" / "fixtures" / "misc" / "postfix37_maillog_file.log.gz"


def run(folder: Path, files: int, per_file_view: bool) -> list[float]:
    con = duckdb.connect(str(folder / "landing.duckdb"))
    ensure_schema(con)
    src, parser, ctx = FileSource(SAMPLE, SAMPLE.name), MaillogParser(), ParseContext(year=2026)
    took = []
    for fid in range(1, files + 1):
        t0 = time.perf_counter()
        con.execute("begin")
        land_file(con, parser, fid, src, ctx, view=per_file_view)
        con.execute("commit")
        took.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    refresh_views(con)
    n = con.execute("select count(distinct file_id) from raw.maillog").fetchone()[0]
    con.close()
    assert n == files, (n, files)
    print(f"    one refresh_views at the end: {1000 * (time.perf_counter() - t0):.0f} ms")
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2000)
    args = ap.parse_args()
    tenth = max(1, args.files // 10)
    for label, per_file in (("(a) view rebuilt per file", True), ("(b) view rebuilt once", False)):
        with tempfile.TemporaryDirectory(prefix="landing-growth-") as d:
            print(label, flush=True)
            t0 = time.perf_counter()
            took = run(Path(d), args.files, per_file)
            first = 1000 * statistics.mean(took[:tenth])
            last = 1000 * statistics.mean(took[-tenth:])
            print(
                f"    {args.files} files in {time.perf_counter() - t0:.1f} s; ms per file: "
                f"first {tenth} {first:.1f}, last {tenth} {last:.1f} (last / first {last / first:.2f})",
                flush=True,
            )


if __name__ == "__main__":
    main()
