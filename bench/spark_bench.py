"""Benchmark the maillog parse on Spark against the DuckDB landing, on the synthetic maillog.

Builds the same maillog as bench/maillog_bench.py (sample Postfix logs repeated with
shifted stamps), then times, each in its own process:

  (a) the DuckDB landing: compiled parser -> per-file Parquet behind raw.maillog (2 threads),
  (c) Spark local[1]: the same parser in a mapInArrow task over the staged file, one parser
      thread per task, every row written as Parquet (ingest -> engines/spark/engine.parse_staged),
  (d) Spark local[2]: the same with two cores (one file is one task, so mostly one core).

With `--samples N` the input is instead every maillog of samples/ x N (bench/scale_bench.py's
archive), staged by `mtabench ingest --parquet` as `mtabench run --engine spark` stages them:
many small files in many runs, packed into Spark tasks as the engine packs them. (a) is then
the DuckDB landing of the same staged files, run by run, through the ingest's own code
(ingest/maillog_run.land_run).

Spark figures exclude the JVM/session start (printed apart); per-core throughput is
lines/s divided by the cores given. Row counts of (a), (c) and (d) must agree.

    uv run python bench/spark_bench.py [--gb 1.0 | --samples 8] [--keep]
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from maillog_bench import ROOT, YEAR, bench_args, land_duckdb, run_child, synthetic_log  # noqa: E402
from scale_bench import build_archive, stage_env  # noqa: E402

# argv: repo, input, out, scratch, master, year. With a year, the input is one maillog (a
# staged file of its own); without ("-"), the landing `mtabench ingest --parquet` staged.
_CHILD_SPARK = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
t0 = time.perf_counter()
from ingest.maillog_lines import StagedLines, staged
from ingest.parsers.base import ParseContext
from mtabench.engines.spark.session import local_session
from mtabench.engines.spark.engine import parse_staged
spark = local_session(warehouse=Path(sys.argv[4]) / "wh", master=sys.argv[5])
started = time.perf_counter() - t0
src, out = Path(sys.argv[2]), Path(sys.argv[3])
if sys.argv[6] == "-":
    files = staged(src)
else:
    year = int(sys.argv[6])
    files = [StagedLines(1, "bench", "-", 0, year, src, src.name, ParseContext(year=year))]
t1 = time.perf_counter()
parse_staged(spark, files, out / "maillog", out / "counts")
seconds = time.perf_counter() - t1
rows = spark.read.parquet(str(out / "maillog")).count()
other = sum(r["noise"] + r["quarantined"] for r in spark.read.parquet(str(out / "counts")).collect())
print(json.dumps({"seconds": seconds, "start": started, "rows": rows, "other": other}))
spark.stop()
"""

# --samples: the same staged files landed by the DuckDB path, run by run, as the ingest lands them
_CHILD_DUCK_STAGED = r"""
import json, sys, time
from collections import defaultdict
sys.path.insert(0, sys.argv[1])
import duckdb
from pathlib import Path
from ingest import maillog_run
from ingest.landing import ensure_schema
from ingest.maillog_lines import staged
from ingest.source import FileSource
runs = defaultdict(list)
for s in staged(Path(sys.argv[2])):
    runs[s.run_key].append(s)
con = duckdb.connect(sys.argv[3])
ensure_schema(con)
t0 = time.perf_counter()
total = parsed = 0
for files in runs.values():
    con.execute("begin")
    srcs = [(s.file_id, FileSource(s.input, s.name)) for s in files]
    for _, c in maillog_run.land_run(con, srcs, files[0].ctx):
        total, parsed = total + c.total, parsed + c.parsed
    con.execute("commit")
seconds = time.perf_counter() - t0
con.close()
print(json.dumps({"seconds": seconds, "total": total, "parsed": parsed}))
"""


@contextmanager
def staged_samples(copies: int, keep: bool):
    """(temporary dir, landing dir, lines): samples/ x `copies` ingested with `--parquet`."""
    tmp = Path(tempfile.mkdtemp(prefix="spark-bench-samples-", dir="/tmp"))
    try:
        runs = build_archive(tmp / "archive", copies)
        data = tmp / "data"
        mtabench = str(Path(sys.executable).parent / "mtabench")
        subprocess.run(
            [mtabench, "ingest", str(tmp / "archive"), "--parquet"],
            env=stage_env(data) | {"MTABENCH_LANDING": str(data / "landing")},
            check=True,
            capture_output=True,
        )
        sys.path.insert(0, str(ROOT))
        from ingest.maillog_lines import staged

        files = staged(data / "landing")
        n = sum(s.lines for s in files)
        print(f"samples x {copies}: {runs} runs, {len(files)} maillog files staged, {n:,} lines", flush=True)
        yield tmp, data / "landing", n
    finally:
        if keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def inputs(args):
    """(n lines, DuckDB's result, a function running one Spark child on `local[cores]`)."""
    if args.samples:
        with staged_samples(args.samples, args.keep) as (tmp, landing, n):
            duck = run_child(_CHILD_DUCK_STAGED, str(ROOT), str(landing), str(tmp / "bench.duckdb"))
            assert duck["total"] == n, (duck, n)

            yield n, duck, _spark_child(tmp, landing, "-")
        return
    with synthetic_log(args.gb, args.keep, "spark-bench-") as (tmp, log, _size, n):
        duck = land_duckdb(tmp, log, n)
        yield n, duck, _spark_child(tmp, log, str(YEAR))


def _spark_child(tmp: Path, src: Path, year: str):
    def run(cores: int) -> dict:
        out = str(tmp / f"spark-{cores}")
        return run_child(_CHILD_SPARK, str(ROOT), str(src), out, str(tmp), f"local[{cores}]", year)

    return run


def main() -> None:
    args = bench_args(__doc__, samples=True)
    with inputs(args) as (n, duck, run_spark):
        spark = {}
        for cores in (1, 2):
            res = run_spark(cores)
            assert res["rows"] == duck["parsed"], (res, duck)
            assert res["rows"] + res["other"] == n, (res, n)
            spark[cores] = res
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

        def rate(s: float, cores: int) -> str:
            return f"{s:8.2f} s  {n / s:>11,.0f} lines/s  {n / s / cores:>11,.0f} lines/s/core"

        print(f"lines: {n:,} (parsed {duck['parsed']:,})")
        print(
            f"(a) DuckDB landing, 2 threads             {rate(duck['seconds'], 2)}  (CPU {duck['cpu']:.1f}s)"
        )
        for cores, res in spark.items():
            print(
                f"({'c' if cores == 1 else 'd'}) Spark local[{cores}] parse -> Parquet     "
                f"{rate(res['seconds'], cores)}  (session start {res['start']:.1f} s, CPU {res['cpu']:.1f} s)"
            )
        print(f"Spark 2 cores vs 1 core: {spark[1]['seconds'] / spark[2]['seconds']:.2f}x")
        print(f"Spark local[2] vs DuckDB: {duck['seconds'] / spark[2]['seconds']:.2f}x wall")
        print(
            "Spark per-core rate / DuckDB per-core rate: "
            f"{(n / spark[1]['seconds']) / (n / duck['seconds'] / 2):.2f}  (target >= 0.5)"
        )
        print(f"peak RSS of any child: {peak_kb / 1024:.0f} MiB (Spark's JVM heap: spark.driver.memory)")


if __name__ == "__main__":
    main()
