"""What a user waits for: the whole `mtabench ingest ARCHIVE` command against pflogsumm.

Builds one run folder whose maillog repeats the sample Postfix logs (timestamps shifted so the
lines stay in time order; bench/maillog_bench.py's generator) to --lines lines or --gb
gigabytes, then runs, alternating, best of --repeat each:

  - `mtabench ingest ARCHIVE` as a subprocess into a new data folder each time (imports,
    detection, parse, landing of lines, messages and minutes: everything the command does), and
  - `pflogsumm` on the same maillog.

For each it prints wall time, CPU time (user + system of the process and its children, from
wait4) and peak RSS (the largest of the process tree's, from wait4's ru_maxrss), and the
ratios pflogsumm / mtabench.

    uv run --frozen python bench/ingest_bench.py [--lines 3900000 | --gb 1.0] [--repeat 3] [--keep]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from maillog_bench import build_log  # noqa: E402


def timed(argv: list[str], env: dict[str, str] | None = None) -> dict:
    """Wall, CPU (user + sys of the whole tree) and peak RSS of one command, from wait4."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed ({status}):\n{err[-2000:]}")
    # ru_maxrss of wait4 is the largest of the child and its waited-for descendants (KiB)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rss_mb": ru.ru_maxrss / 1024}


def lines_to_gb(lines: int) -> float:
    """The generator's size for about `lines` lines (the samples' mean line length)."""
    probe = Path(tempfile.mkdtemp(prefix="ingest-bench-probe-"))
    try:
        size, n = build_log(probe / "maillog", 0.01)
        return lines * size / n / 1e9
    finally:
        shutil.rmtree(probe, ignore_errors=True)


def vmstat_bench(sizes_gb: list[float], repeat: int, keep: bool) -> int:
    """`--vmstat-gb X [Y ...]`: wall, CPU and peak RSS of `mtabench ingest` on a run whose only
    file is a gzipped `vmstat -t 1` capture of X GB of text (bench/vmstat_log.py), best of
    `repeat` by wall time, for each size; then the peak RSS of the largest size over the
    smallest's. The memory a parser needs must not grow with its file (there is no pflogsumm
    for vmstat to compare with).

        uv run --frozen python bench/ingest_bench.py --vmstat-gb 0.1 1.0 [--repeat 1]
    """
    from vmstat_log import build_vmstat

    tmp = Path(tempfile.mkdtemp(prefix="ingest-bench-vmstat-", dir="/tmp"))
    mtabench = str(Path(sys.executable).parent / "mtabench")
    best: dict[float, dict] = {}
    try:
        for gb in sizes_gb:
            run = tmp / f"archive-{gb}" / f"vmstat-{gb}gb"
            run.mkdir(parents=True)
            size, lines, rows = build_vmstat(run / "vmstat.txt.gz", int(gb * 1e9))
            gz = (run / "vmstat.txt.gz").stat().st_size
            print(f"vmstat {size / 1e9:.3f} GB of text ({gz / 1e6:.0f} MB gzip), {lines:,} lines", flush=True)
            for i in range(repeat):
                data = tmp / f"data-{gb}-{i}"
                r = timed([mtabench, "ingest", str(run.parent)], dict(os.environ, MTABENCH_DATA=str(data)))
                shutil.rmtree(data, ignore_errors=True)
                print(
                    f"  try {i + 1}: wall {r['wall']:7.2f} s  cpu {r['cpu']:7.2f} s  "
                    f"peak RSS {r['rss_mb']:7.0f} MB",
                    flush=True,
                )
                if gb not in best or r["wall"] < best[gb]["wall"]:
                    best[gb] = r
            shutil.rmtree(run.parent, ignore_errors=True)
        small, large = min(best), max(best)
        for gb, r in sorted(best.items()):
            print(f"{gb} GB: wall {r['wall']:.2f} s, cpu {r['cpu']:.2f} s, peak RSS {r['rss_mb']:.0f} MB")
        ratio = best[large]["rss_mb"] / best[small]["rss_mb"]
        print(f"peak RSS {large} GB / {small} GB: {ratio:.2f}x (flat within 20 %: {ratio <= 1.2})")
    finally:
        if keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--lines", type=int, default=3_900_000)
    size.add_argument("--gb", type=float)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--vmstat-gb", type=float, nargs="+", help="time a gzipped vmstat of each size instead")
    args = ap.parse_args()
    if args.vmstat_gb:
        return vmstat_bench(args.vmstat_gb, args.repeat, args.keep)
    pflogsumm = shutil.which("pflogsumm")
    if pflogsumm is None:
        raise SystemExit("pflogsumm is not installed (apt-get install pflogsumm)")
    tmp = Path(tempfile.mkdtemp(prefix="ingest-bench-", dir="/tmp"))
    try:
        run = tmp / "archive" / "big-maillog"
        run.mkdir(parents=True)
        gb = args.gb if args.gb is not None else lines_to_gb(args.lines)
        log = run / "maillog"
        size, n = build_log(log, gb)
        print(f"archive {run.parent}: one run, maillog {size / 1e9:.3f} GB, {n:,} lines", flush=True)
        mtabench = str(Path(sys.executable).parent / "mtabench")
        best: dict[str, dict] = {}
        for i in range(args.repeat):
            data = tmp / f"data{i}"
            env = dict(os.environ, MTABENCH_DATA=str(data))
            ours = timed([mtabench, "ingest", str(run.parent)], env)
            theirs = timed([pflogsumm, str(log)])
            shutil.rmtree(data, ignore_errors=True)
            for name, r in (("mtabench ingest", ours), ("pflogsumm", theirs)):
                print(
                    f"  try {i + 1}: {name:16s} wall {r['wall']:7.2f} s  cpu {r['cpu']:7.2f} s  "
                    f"peak RSS {r['rss_mb']:7.0f} MB",
                    flush=True,
                )
                if name not in best or r["wall"] < best[name]["wall"]:
                    best[name] = r
        o, p = best["mtabench ingest"], best["pflogsumm"]
        print(
            f"best of {args.repeat}: mtabench ingest wall {o['wall']:.2f} s, cpu {o['cpu']:.2f} s, "
            f"peak RSS {o['rss_mb']:.0f} MB; pflogsumm wall {p['wall']:.2f} s, cpu {p['cpu']:.2f} s, "
            f"peak RSS {p['rss_mb']:.0f} MB"
        )
        print(
            f"pflogsumm / mtabench ingest: wall {p['wall'] / o['wall']:.2f}x, cpu {p['cpu'] / o['cpu']:.2f}x"
        )
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
