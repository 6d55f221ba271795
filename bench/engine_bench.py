"""The whole `mtabench run` on DuckDB and on Spark, on one archive, in one sitting.

    uv run python bench/engine_bench.py --copies 8 [--keep DIR] [--spark-threads 1 4]
        [--master spark://127.0.0.1:7077] [--repeat 1]

Builds samples/ x N (bench/scale_bench.py's copies), then runs `mtabench run ARCHIVE
--no-publish` as a subprocess into a fresh data folder for each engine (and each dbt thread
count on Spark, MTABENCH_SPARK_DBT_THREADS), in turn: wall time, CPU time (user + system of
every process of its tree, read from /proc every 0.25 s: Spark's JVM is started by dbt and
by py4j, which do not always wait for it, so wait4's children's times miss it) and the peak
of the summed RSS of its process tree (same sampling). Each run's output: <work>/<label>.log.

Figures only; no assertion. The machine is shared and noisy: compare ratios within one run.
Current figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_bench import REPO, _tree_rss_bytes, build_archive, stage_env  # noqa: E402


@dataclass
class Timed:
    label: str
    wall_s: float
    cpu_s: float
    peak_mb: float
    exit_code: int


def _tree_cpu_ticks(root: int) -> dict[int, int]:
    """user + system clock ticks so far of a process and its descendants, by pid."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        ticks[pid] = int(fields[11]) + int(fields[12])  # utime, stime
    out = {}
    for pid in ticks:
        p = pid
        while p not in (0, 1) and p != root:
            p = parent.get(p, 0)
        if p == root:
            out[pid] = ticks[pid]
    return out


def run_once(label: str, archive: Path, data: Path, env_extra: dict[str, str], engine: str) -> Timed:
    shutil.rmtree(data, ignore_errors=True)
    env = {**stage_env(data), **env_extra}
    log = data.with_suffix(".log")
    peak, done = 0, threading.Event()
    cpu_ticks: dict[int, int] = {}
    argv = [sys.executable, "-m", "mtabench.cli.main", "run", str(archive), "--no-publish"]
    argv += ["--engine", engine]
    t0 = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)

        def sample() -> None:
            nonlocal peak
            while not done.wait(0.25):
                peak = max(peak, _tree_rss_bytes(proc.pid))
                for pid, t in _tree_cpu_ticks(proc.pid).items():
                    cpu_ticks[pid] = max(cpu_ticks.get(pid, 0), t)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        done.set()
        sampler.join()
    wall = time.perf_counter() - t0
    own = usage.ru_utime + usage.ru_stime  # the top process and the children it reaped
    sampled = sum(cpu_ticks.values()) / os.sysconf("SC_CLK_TCK")
    cpu = max(own, sampled)
    t = Timed(label, wall, cpu, peak / 2**20, os.waitstatus_to_exitcode(status))
    print(
        f"  {label:<28} {t.wall_s:7.1f} s wall  {t.cpu_s:7.1f} s CPU  peak {t.peak_mb:6.0f} MB"
        f"  exit {t.exit_code}   ({log})",
        flush=True,
    )
    return t


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=8)
    ap.add_argument("--keep", type=Path, help="work folder to keep (default: a temp folder, removed)")
    ap.add_argument("--spark-threads", type=int, nargs="+", default=[4])
    ap.add_argument("--master", default=os.environ.get("MTABENCH_SPARK_MASTER", "local[2]"))
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="engine-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    archive = work / "archive"
    if not archive.exists():
        print(f"archive: samples x {args.copies}: {build_archive(archive, args.copies)} runs", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}; Spark master {args.master}", flush=True)
    results: list[Timed] = []
    for i in range(args.repeat):
        results.append(run_once(f"duckdb #{i + 1}", archive, work / f"duckdb-{i}", {}, "duckdb"))
        for threads in args.spark_threads:
            extra = {"MTABENCH_SPARK_MASTER": args.master, "MTABENCH_SPARK_DBT_THREADS": str(threads)}
            label = f"spark dbt threads={threads} #{i + 1}"
            results.append(run_once(label, archive, work / f"spark-{threads}-{i}", extra, "spark"))
    duck = min((r.wall_s for r in results if r.label.startswith("duckdb")), default=0)
    for r in results:
        if r.label.startswith("spark") and duck:
            print(f"  {r.label}: {r.wall_s / duck:.2f}x the DuckDB run's wall time")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return max(r.exit_code for r in results)


if __name__ == "__main__":
    sys.exit(main())
