"""Benchmark the maillog parse on Spark against DuckDB, on the synthetic >= 1 GB maillog.

Builds the same maillog as bench/maillog_bench.py (sample Postfix logs repeated with
shifted stamps), then times, in one run, each in its own process:

  (a) DuckDB: MaillogParser.land into a fresh DuckDB file (2 threads),
  (b) lines to Parquet: the (line_no, line, bad) file the Spark path reads (DuckDB COPY),
  (c) Spark local[1]: the maillog parse as Spark SQL over (b), written as Parquet,
  (d) Spark local[2]: the same with two cores.

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

_CHILD_LINES = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from ingest.parsers.maillog import write_lines_parquet
t0 = time.perf_counter()
n = write_lines_parquet(Path(sys.argv[2]), Path(sys.argv[3]))
print(json.dumps({"seconds": time.perf_counter() - t0, "lines": n}))
"""

_CHILD_SPARK = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
t0 = time.perf_counter()
from ingest.parsers.base import ParseContext
from ingest.parsers.maillog_spark import parse_lines_spark, split_parsed
from mtabench.spark import local_session
spark = local_session(warehouse=Path(sys.argv[4]) / "wh", master=sys.argv[5])
spark.conf.set("spark.sql.codegen.wholeStage", "false")
spark.conf.set("spark.sql.files.maxPartitionBytes", "16m")
started = time.perf_counter() - t0
t1 = time.perf_counter()
lines = spark.read.parquet(sys.argv[2])
year = int(sys.argv[6])
ctx = ParseContext(year=year)
parsed = parse_lines_spark(spark, lines, year=year, ctx=ctx).persist()
maillog, noise, quarantine = split_parsed(parsed, file_id=1, ctx=ctx)
maillog.write.mode("overwrite").parquet(sys.argv[3])
seconds = time.perf_counter() - t1
rows = spark.read.parquet(sys.argv[3]).count()
other = noise.count() + quarantine.count()
print(json.dumps({"seconds": seconds, "start": started, "rows": rows, "other": other}))
spark.stop()
"""


def main() -> None:
    args = bench_args(__doc__)
    with synthetic_log(args.gb, args.keep, "spark-bench-") as (tmp, log, _size, n):
        duck = land_duckdb(tmp, log, n)
        lines = run_child(_CHILD_LINES, str(ROOT), str(log), str(tmp / "lines.parquet"))
        assert lines["lines"] == n, (lines, n)
        spark = {}
        for cores in (1, 2):
            res = run_child(
                _CHILD_SPARK,
                str(ROOT),
                str(tmp / "lines.parquet"),
                str(tmp / f"maillog-{cores}.parquet"),
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
            f"(a) DuckDB MaillogParser.land, 2 threads   {rate(duck['seconds'], 2)}  (CPU {duck['cpu']:.1f}s)"
        )
        print(f"(b) lines -> Parquet (DuckDB COPY)         {rate(lines['seconds'], 2)}")
        for cores, res in spark.items():
            print(
                f"({'c' if cores == 1 else 'd'}) Spark local[{cores}] parse -> Parquet     "
                f"{rate(res['seconds'], cores)}  (session start {res['start']:.1f} s, CPU {res['cpu']:.1f} s)"
            )
        print(f"Spark 2 cores vs 1 core: {spark[1]['seconds'] / spark[2]['seconds']:.2f}x")
        print(f"Spark local[2] vs DuckDB: {duck['seconds'] / spark[2]['seconds']:.2f}x (parse only)")
        print(
            "Spark local[2] (b + d) vs DuckDB: "
            f"{duck['seconds'] / (lines['seconds'] + spark[2]['seconds']):.2f}x (lines file included)"
        )
        print(f"peak RSS of any child: {peak_kb / 1024:.0f} MiB (Spark's JVM heap: spark.driver.memory)")


if __name__ == "__main__":
    main()
