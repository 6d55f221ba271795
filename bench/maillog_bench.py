"""A sub-stage benchmark: the maillog landing alone (compiled parser -> per-file Parquet
behind raw.maillog, with the file's messages and minutes assembled in the same pass) against
pflogsumm and a bare DuckDB line count. The figure a user waits for, the whole `mtabench
ingest` command, is bench/ingest_bench.py's.

Builds a plain-text maillog of --gb gigabytes (default 1.0) in a temporary directory under
/tmp by repeating the sample Postfix maillogs with their timestamps shifted so that lines
stay in time order, then times, on that one file:

  (a) the landing of the file (ingest.landing.land_file: lines, messages, minutes) into a
      fresh DuckDB file and its Parquet folder, in a subprocess (imports included; peak RSS
      measured),
  (b) pflogsumm (Debian package) reading the file,
  (c) `select count(*) from read_csv(...)` with the parser's reader options.

DuckDB runs with 2 threads, memory_limit 2GB and a spill directory. Usage:

    uv run python bench/maillog_bench.py [--gb 1.0] [--keep]
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SOURCES = sorted((ROOT / "samples" / "runs").glob("*/maillog*.gz")) + [
    ROOT / "tests" / "fixtures" / "misc" / "postfix37_maillog_file.log.gz"
]
YEAR = 2026
DUCK_SETTINGS = "set threads=2; set memory_limit='2GB'; set preserve_insertion_order=true;"

_CHILD_LAND = r"""
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import duckdb
from pathlib import Path
from ingest.landing import ensure_schema, land_file
from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import MaillogParser
from ingest.source import FileSource
log, db, spill, settings = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
con = duckdb.connect(db)
con.execute(settings)
con.execute(f"set temp_directory='{spill}'")
ensure_schema(con)
con.execute("begin")
src = FileSource(Path(log), Path(log).name)
c = land_file(con, MaillogParser(), 1, src, ParseContext(year=int(sys.argv[6])))
con.execute("commit")
con.execute("checkpoint")
n = con.execute("select count(*) from raw.maillog").fetchone()[0]
landed = time.perf_counter() - t0
messages = con.execute("select count(*) from raw.maillog_messages").fetchone()[0]
con.close()
print(json.dumps({"seconds": landed, "total": c.total, "parsed": c.parsed,
                  "noise": c.noise, "quarantined": c.quarantined, "view_rows": n,
                  "messages": messages}))
"""

# DuckDB's line reader: one VARCHAR column, no delimiter (NUL), no quoting
READ_OPTS = (
    "columns={'line': 'VARCHAR'}, header=false, quote='', escape='', delim=chr(0), "
    "auto_detect=false, strict_mode=false, compression='none'"
)

_CHILD_COUNT = r"""
import json, sys, time, duckdb
log, settings, opts = sys.argv[2], sys.argv[3], sys.argv[4]
t0 = time.perf_counter()
con = duckdb.connect()
con.execute(settings)
n = con.execute(f"select count(*) from read_csv('{log}', {opts})").fetchone()[0]
print(json.dumps({"seconds": time.perf_counter() - t0, "lines": n}))
"""


def _stamp(line: bytes) -> datetime | None:
    try:
        return datetime.strptime(f"{YEAR} " + line[:15].decode(), "%Y %b %d %H:%M:%S")
    except ValueError:
        return None


def _block() -> tuple[list[list[bytes]], list[timedelta], timedelta]:
    """Sample files as line lists, each file's shift so it follows the previous, total span."""
    files, shifts = [], []
    cursor: datetime | None = None
    first: datetime | None = None
    for src in SOURCES:
        lines = gzip.decompress(src.read_bytes()).splitlines(keepends=True)
        stamps = [s for s in (_stamp(ln) for ln in lines) if s]
        if not stamps:
            continue
        shift = timedelta(0) if cursor is None else (cursor - stamps[0] + timedelta(seconds=1))
        first = first or stamps[0] + shift
        cursor = stamps[-1] + shift
        files.append(lines)
        shifts.append(shift)
    assert cursor is not None and first is not None
    return files, shifts, cursor - first + timedelta(seconds=1)


def build_log(path: Path, gb: float) -> tuple[int, int]:
    files, shifts, span = _block()
    target = int(gb * 1e9)
    size = lines_out = rep = 0
    with path.open("wb") as out:
        while size < target:
            for lines, shift in zip(files, shifts, strict=True):
                delta = shift + span * rep
                cache: dict[bytes, bytes] = {}

                def restamp(ln: bytes, delta=delta, cache=cache) -> bytes:
                    key = ln[:15]
                    new = cache.get(key)
                    if new is None:
                        st = _stamp(ln)
                        new = cache[key] = (
                            key if st is None else (st + delta).strftime("%b %e %H:%M:%S").encode()
                        )
                    return new + ln[15:]

                chunk = b"".join(map(restamp, lines))
                out.write(chunk)
                size += len(chunk)
                lines_out += len(lines)
            rep += 1
    return size, lines_out


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_child(code: str, *args: str) -> dict:
    c0 = _cpu_children()
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["cpu"] = _cpu_children() - c0  # user + system CPU seconds of the child (all threads)
    return res


def bench_args(doc: str, samples: bool = False) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gb", type=float, default=1.0, help="size of the generated maillog in GB (1e9 bytes)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    if samples:
        ap.add_argument("--samples", type=int, metavar="N", help="the maillogs of samples/ x N instead")
    return ap.parse_args()


@contextmanager
def synthetic_log(gb: float, keep: bool, prefix: str) -> Iterator[tuple[Path, Path, int, int]]:
    """(temporary dir, maillog, bytes, lines): the log built, the dir removed unless `keep`."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        log = tmp / "maillog"
        t0 = time.perf_counter()
        size, n = build_log(log, gb)
        print(
            f"built {log}: {size / 1e9:.3f} GB, {n:,} lines in {time.perf_counter() - t0:.1f} s", flush=True
        )
        yield tmp, log, size, n
    finally:
        if keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def land_duckdb(tmp: Path, log: Path, n: int) -> dict:
    """(a) of both benchmarks: MaillogParser.land into a fresh DuckDB file, in a child."""
    (tmp / "spill").mkdir()
    res = run_child(
        _CHILD_LAND,
        str(ROOT),
        str(log),
        str(tmp / "bench.duckdb"),
        str(tmp / "spill"),
        DUCK_SETTINGS,
        str(YEAR),
    )
    assert res["total"] == n, (res, n)
    assert res["view_rows"] == res["parsed"], res
    return res


def main() -> None:
    args = bench_args(__doc__)
    pflogsumm = shutil.which("pflogsumm") or "/usr/sbin/pflogsumm"
    if not Path(pflogsumm).exists():
        subprocess.run(["apt-get", "install", "-y", "pflogsumm"], check=True, capture_output=True)
    with synthetic_log(args.gb, args.keep, "maillog-bench-") as (tmp, log, size, n):
        ours = land_duckdb(tmp, log, n)
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        db_size = (tmp / "bench.duckdb").stat().st_size + sum(
            f.stat().st_size for f in (tmp / "bench.duckdb.parquet").rglob("*.parquet")
        )

        t, c0 = time.perf_counter(), _cpu_children()
        subprocess.run(
            [pflogsumm, str(log)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        pf_s = time.perf_counter() - t
        pf_cpu = _cpu_children() - c0

        bare = run_child(_CHILD_COUNT, str(ROOT), str(log), DUCK_SETTINGS, READ_OPTS)
        assert bare["lines"] == n, (bare, n)

        def rate(s: float, cpu: float) -> str:
            return f"{s:8.2f} s  {n / s:>12,.0f} lines/s  {size / 1e6 / s:8.1f} MB/s  (CPU {cpu:7.2f} s)"

        print(
            f"lines: {n:,}  (parsed {ours['parsed']:,}, noise {ours['noise']:,}, "
            f"quarantined {ours['quarantined']:,})"
        )
        print(
            f"(a) maillog ingest -> Parquet + view   {rate(ours['seconds'], ours['cpu'])}   "
            f"peak RSS {peak_kb / 1024:.0f} MiB, db {db_size / 1e6:.0f} MB, {ours['messages']:,} messages"
        )
        print(f"(b) pflogsumm                          {rate(pf_s, pf_cpu)}")
        print(f"(c) bare DuckDB count(*) read_csv      {rate(bare['seconds'], bare['cpu'])}")
        print(
            f"ours / pflogsumm speed: {pf_s / ours['seconds']:.1f}x wall, "
            f"{pf_cpu / ours['cpu']:.1f}x CPU   (target >= 10x, stretch 20x)"
        )
        print(f"ours per core: {n / ours['cpu']:,.0f} lines per CPU second")
        print(
            f"ours / bare count speed: {bare['seconds'] / ours['seconds']:.3f} wall, "
            f"{bare['cpu'] / ours['cpu']:.3f} CPU   (target >= 0.333)"
        )
        print("(all columns are extracted at ingest; the staging model adds no extraction work)")


if __name__ == "__main__":
    main()
