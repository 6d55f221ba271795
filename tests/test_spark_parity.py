"""The same dbt models on Spark and on DuckDB give the same marts.

The DuckDB side is the session's `mtabench run` on samples/; the Spark side is
`mtabench run --engine spark` on the same samples: the Parquet landing, `dbt build` on a
local SparkSession (method: session), marts gathered from Spark's Delta tables.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
from pathlib import Path

import duckdb
import pytest

from tests.conftest import SAMPLES

# Doubles may differ in the last bits (sums in another order, Java vs C math): relative
# 1e-9, or 1e-9 absolute around zero. Every other type must be equal.
REL_TOL = 1e-9
ABS_TOL = 1e-9
PARITY_MARTS = [
    "runs",
    "minutes",
    "events",
    "messages",
    "daily_capacity",
    "error_bursts",
    "comparisons",
    "comparison_levels",
    "saturation_events",
]


@pytest.fixture(scope="module")
def spark_db(built_db: Path, data_dir: Path) -> Path:
    from mtabench.cli.main import main

    assert main(["run", str(SAMPLES), "--db", str(built_db), "--engine", "spark", "--no-publish"]) == 0
    out = data_dir / "spark" / "mtabench.duckdb"
    assert out.exists()
    return out


def _columns(con, catalog: str, table: str) -> list[tuple[str, str]]:
    return con.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_catalog = ? and table_schema = 'main' and table_name = ? order by ordinal_position",
        [catalog, table],
    ).fetchall()


def _rows(con, catalog: str, table: str, cols: list[tuple[str, str]]) -> list[tuple]:
    exact = [f'"{c}"' for c, t in cols if t not in ("DOUBLE", "FLOAT")]
    floats = [f'"{c}"' for c, t in cols if t in ("DOUBLE", "FLOAT")]
    names = ", ".join(f'"{c}"' for c, _ in cols)
    order = ", ".join(f"{c} nulls first" for c in exact + floats)
    return con.execute(f"select {names} from {catalog}.main.{table} order by {order}").fetchall()


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL) or (math.isnan(a) and math.isnan(b))
    return a == b


@pytest.mark.parametrize("mart", PARITY_MARTS)
def test_spark_marts_equal_duckdb_marts(mart: str, built_db: Path, spark_db: Path) -> None:
    con = duckdb.connect()
    con.execute(f"attach '{built_db}' as d (read_only)")
    con.execute(f"attach '{spark_db}' as s (read_only)")
    cols = _columns(con, "d", mart)
    assert cols, f"{mart} missing from the DuckDB build"
    assert _columns(con, "s", mart) == cols, "column names, order and types must match"
    want, got = _rows(con, "d", mart, cols), _rows(con, "s", mart, cols)
    assert len(want) > 0
    assert len(got) == len(want)
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        bad = [c for (c, _), x, y in zip(cols, w, g, strict=True) if not _same(x, y)]
        assert not bad, f"{mart} row {i}: {bad} differ: duckdb={w} spark={g}"


def test_spark_wrote_the_marts_itself(spark_db: Path, data_dir: Path) -> None:
    """The gathered marts come from Spark's own output, a Delta table per mart (read by
    delta-rs here, not by Spark)."""
    from deltalake import DeltaTable

    marts = data_dir / "spark" / "warehouse" / "main.db"
    for mart in PARITY_MARTS:
        table = DeltaTable(str(marts / mart))
        assert table.file_uris(), f"no Spark output for {mart}"
        n = table.to_pyarrow_table().num_rows
        with duckdb.connect(str(spark_db), read_only=True) as con:
            assert con.execute(f"select count(*) from main.{mart}").fetchone()[0] == n


def test_duckdb_reads_the_parquet_landing_too(built_db: Path, spark_db: Path, data_dir: Path) -> None:
    """dbt on DuckDB over the Parquet landing (no raw tables in the file) builds the same marts."""
    from mtabench.paths import Paths
    from mtabench.pipeline.dbt import run_dbt

    paths = Paths.resolve(str(data_dir / "from-parquet.duckdb"))
    run_dbt(paths, ["build", "--vars", json.dumps({"landing_path": str(paths.landing_dir)})], lambda _: None)
    con = duckdb.connect()
    con.execute(f"attach '{built_db}' as d (read_only)")
    con.execute(f"attach '{paths.db}' as p (read_only)")
    # the landing really is the Parquet one: raw.* are views over read_parquet
    kinds = dict(
        con.execute(
            "select table_name, table_type from information_schema.tables "
            "where table_catalog = 'p' and table_schema = 'raw'"
        ).fetchall()
    )
    assert kinds and set(kinds.values()) == {"VIEW"}
    for mart in PARITY_MARTS:
        cols = _columns(con, "d", mart)
        assert _rows(con, "p", mart, cols) == _rows(con, "d", mart, cols), mart


def test_parquet_landing_is_partitioned_by_format_and_run(built_db: Path, spark_db: Path, data_dir: Path):
    from ingest.parquet_landing import export_landing

    root = data_dir / "landing"
    with duckdb.connect(str(built_db), read_only=True) as con:
        runs = {r[0] for r in con.execute("select run_key from raw.runs").fetchall()}
        lines = con.execute("select count(*) from raw.maillog").fetchone()[0]
        before = {p: p.stat().st_mtime_ns for p in root.rglob("*.parquet")}
        again = export_landing(con, root)
    # a second export over an unchanged landing rewrites nothing
    assert again.partitions_written == 0 and again.partitions_removed == 0
    assert {p: p.stat().st_mtime_ns for p in root.rglob("*.parquet")} == before
    one = "select distinct run_key from read_parquet(?, hive_partitioning = true)"
    parts = {
        duckdb.execute(one, [str(p)]).fetchone()[0]
        for p in (root / "runs").glob("run_key=*/*.parquet")
        if "__schema__" not in str(p)
    }
    assert parts == runs
    got = duckdb.sql(f"select count(*) from read_parquet('{root}/maillog/*/*.parquet')").fetchone()[0]
    assert got == lines > 0


def test_spark_parsed_every_maillog_line_as_duckdb_did(built_db: Path, spark_db: Path) -> None:
    """raw.maillog of the Spark build is Spark SQL's parse of the staged lines: the same rows."""
    con = duckdb.connect()
    con.execute(f"attach '{built_db}' as d (read_only)")
    con.execute(f"attach '{spark_db}' as s (read_only)")
    n = con.execute("select count(*) from d.raw.maillog").fetchone()[0]
    assert n > 0
    assert con.execute("select count(*) from s.raw.maillog").fetchone()[0] == n
    for a, b in (("d", "s"), ("s", "d")):
        extra = con.execute(
            f"select count(*) from (select * from {a}.raw.maillog except all select * from {b}.raw.maillog)"
        ).fetchone()[0]
        assert extra == 0, f"{extra} rows of {a}.raw.maillog not in {b}.raw.maillog"


def _differences(a: Path, b: Path) -> dict[str, tuple[int, int]]:
    """Per mart of `a`: rows only in a, rows only in b (EXCEPT ALL both ways; doubles to 6
    decimals, as tests/test_incremental.py compares builds)."""
    out = {}
    con = duckdb.connect()
    con.execute(f"attach '{a}' as a (read_only)")
    con.execute(f"attach '{b}' as b (read_only)")
    marts = [
        t
        for (t,) in con.execute(
            "select table_name from duckdb_tables() where database_name = 'a' and schema_name = 'main'"
        ).fetchall()
    ]
    assert set(PARITY_MARTS) <= set(marts)
    for t in marts:
        cols = _columns(con, "a", t)
        assert _columns(con, "b", t) == cols, t
        names = ", ".join(f'round("{c}", 6)' if ty in ("DOUBLE", "FLOAT") else f'"{c}"' for c, ty in cols)
        a_rows, b_rows = (f"select {names} from {db}.main.{t}" for db in ("a", "b"))
        only_a = con.execute(f"select count(*) from ({a_rows} except all {b_rows})").fetchone()[0]
        only_b = con.execute(f"select count(*) from ({b_rows} except all {a_rows})").fetchone()[0]
        if only_a or only_b:
            out[t] = (only_a, only_b)
    return out


def test_spark_adds_a_run_to_its_delta_marts(built_db: Path, spark_db: Path, data_dir: Path, tmp_path: Path):
    """Last in this module: it grows the module's Spark build. One run added to a copy of the
    samples, ingested into a copy of the ledger, and a second Spark build into the same catalog:
    the marts' Delta tables were kept and appended to (their logs go on), and the gathered
    marts equal a full DuckDB build of the grown archive. A build with nothing new is skipped."""
    from deltalake import DeltaTable

    from mtabench.cli.main import main

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from scale_bench import copy_run

    messages = data_dir / "spark" / "warehouse" / "main.db" / "messages"
    first = DeltaTable(str(messages)).version()
    archive = tmp_path / "archive"
    shutil.copytree(SAMPLES, archive)
    copy_run(SAMPLES / "runs/a-baseline-t5", archive / "added/a-baseline-t5", 9)
    # written an hour ago, as a recorded run is: a file modified within the last two seconds
    # has no mtime in the ledger until the next ingest (file_stat.RACY_NS), whose landing
    # then differs, and so would the next build's inputs
    hour_ago = time.time() - 3600
    for f in archive.rglob("*"):
        os.utime(f, (hour_ago, hour_ago), follow_symlinks=False)
    ledger = tmp_path / "ledger.duckdb"
    shutil.copyfile(built_db, ledger)
    assert main(["run", str(archive), "--db", str(ledger), "--engine", "spark", "--no-publish"]) == 0
    table = DeltaTable(str(messages))
    kept = table.version()

    # nothing changed since: the next build is skipped (no dbt), its marts kept as they were
    assert main(["run", str(archive), "--db", str(ledger), "--engine", "spark", "--no-publish"]) == 0
    log = (data_dir / "logs" / "spark-build.log").read_text()
    assert "marts kept" in log and "maillog parsed" not in log and "PASS=" not in log, log
    assert DeltaTable(str(messages)).version() == kept

    full = tmp_path / "full.duckdb"
    assert main(["run", str(archive), "--db", str(full), "--no-publish"]) == 0
    assert table.version() > first  # the same table, not a new one
    operations = [h["operation"] for h in table.history()]
    # the first build's table, then an append of the added run: nothing was stale, nothing rebuilt
    assert operations[-1].endswith("TABLE AS SELECT") and operations[:-1] == ["WRITE"], operations
    with duckdb.connect(str(spark_db), read_only=True) as con:
        added = con.execute("select count(*) from main.messages where run_id = 'a-baseline-t5~c9'")
        assert added.fetchone()[0] > 0
    assert _differences(full, spark_db) == {}
