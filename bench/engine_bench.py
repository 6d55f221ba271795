"""The whole `mtabench run` on DuckDB and on Spark, on one archive, in one sitting.

    uv run python bench/engine_bench.py --copies 8 [--keep DIR] [--spark-threads 1 4]
        [--master spark://127.0.0.1:7077 | --cluster] [--repeat 1]

Builds samples/ x N (bench/scale_bench.py's copies), then runs `mtabench run ARCHIVE
--no-publish` as a subprocess into a fresh data folder for each engine (and each dbt thread
count on Spark, MTABENCH_SPARK_DBT_THREADS), in turn: wall time, CPU time (user + system of
every process of its tree, read from /proc every 0.25 s: Spark's JVM is started by dbt and
by py4j, which do not always wait for it, so wait4's children's times miss it) and the peak
of the summed RSS of its process tree (same sampling). Each run's output: <work>/<label>.log.

--cluster runs Spark on a standalone master and 2 one-core workers started here whose hosts
share nothing with the driver but loopback (tests/spark_cluster.py, as the cluster test does),
with the engine's storage on an S3-compatible server (scripts/s3_server.sh): what a cluster of
two machines would do, squeezed onto this one.

Figures only; no assertion. The machine is shared and noisy: compare ratios within one run.
Current figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "tests"))
from proc_tree import watch  # noqa: E402
from scale_bench import REPO, build_archive, stage_env  # noqa: E402


@dataclass
class Timed:
    label: str
    wall_s: float
    cpu_s: float
    peak_mb: float
    exit_code: int


def run_once(label: str, archive: Path, data: Path, env_extra: dict[str, str], engine: str) -> Timed:
    shutil.rmtree(data, ignore_errors=True)
    env = {**stage_env(data), **env_extra}
    log = data.with_suffix(".log")
    argv = [sys.executable, "-m", "mtabench.cli.main", "run", str(archive), "--no-publish"]
    argv += ["--engine", engine]
    w = watch(argv, env, log, cwd=REPO)
    t = Timed(label, w.wall_s, w.cpu_s, w.peak_bytes / 2**20, w.exit_code)
    print(
        f"  {label:<28} {t.wall_s:7.1f} s wall  {t.cpu_s:7.1f} s CPU  peak {t.peak_mb:6.0f} MB"
        f"  exit {t.exit_code}   ({log})",
        flush=True,
    )
    return t


@contextmanager
def _cluster(work: Path, worker_memory: str) -> Iterator[dict[str, str]]:
    """An S3-compatible server and a standalone cluster whose workers see none of `work`:
    the Spark settings of `mtabench run` on it."""
    from s3_server import running_server
    from spark_cluster import SparkCluster

    with running_server(work / "s3") as server:
        bucket = server.new_bucket()
        with SparkCluster(workers=2, memory=worker_memory, hide=[work], env=server.env) as cluster:
            print(f"cluster up in {cluster.start_seconds:.1f} s at {cluster.master_url}", flush=True)
            yield {
                **server.env,
                "MTABENCH_SPARK_MASTER": cluster.master_url,
                "MTABENCH_SPARK_STORAGE": f"s3a://{bucket}/mtabench",
            }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=8)
    ap.add_argument("--keep", type=Path, help="work folder to keep (default: a temp folder, removed)")
    ap.add_argument("--spark-threads", type=int, nargs="+", default=[4])
    ap.add_argument("--master", default=os.environ.get("MTABENCH_SPARK_MASTER", "local[2]"))
    ap.add_argument("--cluster", action="store_true", help="a 2-worker cluster with S3 storage, started here")
    ap.add_argument("--worker-memory", default="2g", help="each cluster worker's memory (--cluster)")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args(argv)
    work = args.keep or Path(tempfile.mkdtemp(prefix="engine-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    archive = work / "archive"
    if not archive.exists():
        print(f"archive: samples x {args.copies}: {build_archive(archive, args.copies)} runs", flush=True)
    local = nullcontext({"MTABENCH_SPARK_MASTER": args.master})
    with _cluster(work, args.worker_memory) if args.cluster else local as spark_env:
        where = "a 2-worker cluster, S3 storage" if args.cluster else args.master
        print(f"load average {os.getloadavg()[0]:.1f}; Spark on {where}", flush=True)
        results: list[Timed] = []
        for i in range(args.repeat):
            results.append(run_once(f"duckdb #{i + 1}", archive, work / f"duckdb-{i}", {}, "duckdb"))
            for threads in args.spark_threads:
                extra = {**spark_env, "MTABENCH_SPARK_DBT_THREADS": str(threads)}
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
