"""Benchmark the maillog parse on Spark against the DuckDB landing, on the synthetic maillog.

Builds the same maillog as bench/maillog_bench.py (sample Postfix logs repeated with
shifted stamps), then times, each in its own process:

  (a) the DuckDB landing: compiled parser -> per-file Parquet behind raw.maillog (2 threads),
  (c) Spark local[1]: the same parser in a mapInArrow task over the staged file, one parser
      thread per task, every row written as Parquet (ingest -> engines/spark/engine.parse_staged),
  (d) Spark local[2]: the same with two cores (one file is one task, so mostly one core).

Spark figures exclude the JVM/session start (printed apart); per-core throughput is
lines/s divided by the cores given. Row counts of (a), (c) and (d) must agree.

    uv run python bench/spark_bench.py [--gb 1.0] [--keep]
"""

from __future__ import annotations

import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from maillog_bench import ROOT, YEAR, bench_args, land_duckdb, run_child, synthetic_log  # noqa: E402

_CHILD_SPARK = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
t0 = time.perf_counter()
from ingest.maillog_lines import StagedLines
from ingest.parsers.base import ParseContext
from mtabench.engines.spark.session import local_session
from mtabench.engines.spark.engine import parse_staged
spark = local_session(warehouse=Path(sys.argv[4]) / "wh", master=sys.argv[5])
started = time.perf_counter() - t0
log, out = Path(sys.argv[2]), Path(sys.argv[3])
year = int(sys.argv[6])
staged = [StagedLines(1, "bench", "-", 0, year, log, log.name, ParseContext(year=year))]
t1 = time.perf_counter()
parse_staged(spark, staged, out / "maillog", out / "counts")
seconds = time.perf_counter() - t1
rows = spark.read.parquet(str(out / "maillog")).count()
other = sum(r["noise"] + r["quarantined"] for r in spark.read.parquet(str(out / "counts")).collect())
print(json.dumps({"seconds": seconds, "start": started, "rows": rows, "other": other}))
spark.stop()
"""


def main() -> None:
    args = bench_args(__doc__)
    with synthetic_log(args.gb, args.keep, "spark-bench-") as (tmp, log, _size, n):
        duck = land_duckdb(tmp, log, n)
        spark = {}
        for cores in (1, 2):
            res = run_child(
                _CHILD_SPARK,
                str(ROOT),
                str(log),
                str(tmp / f"spark-{cores}"),
                str(tmp),
                f"local[{cores}]",
                str(YEAR),
            )
            assert res["rows"] == duck["parsed"], (res, duck)
            assert res["rows"] + res["other"] == n, (res, n)
            spark[cores] = res
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss

        def rate(s: float, cores: int) -> str:
            return f"{s:8.2f} s  {n / s:>11,.0f} lines/s  {n / s / cores:>11,.0f} lines/s/core"

        print(f"lines: {n:,} (parsed {duck['parsed']:,}, noise {duck['noise']:,})")
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
