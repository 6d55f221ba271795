"""Publishing goes where the user asked, holds what readers read (not the landing), and a
publish killed mid-write leaves nothing behind."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time

import duckdb
from conftest import SAMPLES

from mtabench.cli.main import main
from mtabench.pipeline.publish import PUBLISHED_RAW, publish


def _tables(db) -> dict[str, int]:
    """Every base table of a DuckDB file with its row count."""
    with duckdb.connect(str(db), read_only=True) as con:
        names = con.execute(
            "select table_schema || '.' || table_name from information_schema.tables "
            "where table_type = 'BASE TABLE'"
        ).fetchall()
        return {n: con.execute(f"select count(*) from {n}").fetchone()[0] for (n,) in names}


def _assert_holds_the_marts_of(serving, build) -> None:
    served, built = _tables(serving), _tables(build)
    # the serving file's own bookkeeping: what it was published from (mtabench/pipeline/publish.py)
    state = {n for n in served if n.startswith("publish_state.")}
    assert state == {"publish_state.source", "publish_state.runs"}
    served = {n: c for n, c in served.items() if not n.startswith("publish_state.")}
    expected = {
        n: c
        for n, c in built.items()
        if n.split(".")[0] in ("main", "reference") or n in {f"raw.{t}" for t in PUBLISHED_RAW}
    }
    assert served == expected
    assert {"main.runs", "main.minutes", "main.messages", "raw.files"} <= served.keys()
    with duckdb.connect(str(serving), read_only=True) as con:  # the same rows, not just as many
        con.execute("attach '{}' as build (read_only)".format(str(build).replace("'", "''")))
        for name in ("main.runs", "main.minutes", "main.comparisons", "raw.files"):
            diff = con.execute(
                f"select count(*) from ((from {name} except all from build.{name}) "
                f"union all (from build.{name} except all from {name}))"
            ).fetchone()[0]
            assert diff == 0, name


def _size(path) -> int:
    """0 for a file that is gone (the child renames its copy when done)."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_scratch_build_leaves_the_default_serving_file_alone(built_db, data_dir, tmp_path):
    default_serving = data_dir / "serving" / "mtabench.duckdb"
    before = _sha(default_serving)
    archive = tmp_path / "archive"
    shutil.copytree(SAMPLES / "seed000" / "s11-elvtune", archive / "s11-elvtune")
    scratch = tmp_path / "scratch" / "x.duckdb"
    assert main(["run", str(archive), "--db", str(scratch)]) == 0
    assert _sha(default_serving) == before
    derived = scratch.parent / "serving" / "x.duckdb"
    assert derived.is_file()
    _assert_holds_the_marts_of(derived, scratch)
    explicit = tmp_path / "elsewhere" / "served.duckdb"
    assert main(["publish", "--db", str(scratch), "--serving-db", str(explicit)]) == 0
    _assert_holds_the_marts_of(explicit, scratch)
    assert _sha(default_serving) == before


def test_serving_file_leaves_the_landing_and_intermediates_in_the_build(built_db, data_dir):
    serving = data_dir / "serving" / "mtabench.duckdb"
    _assert_holds_the_marts_of(serving, built_db)
    served = _tables(serving)
    assert not [n for n in served if n.startswith(("intermediate.", "staging."))]
    assert "raw.postal_rows" not in served and "raw.noise" not in served
    assert serving.stat().st_size < built_db.stat().st_size


KILLED_PUBLISH = """
import sys
from pathlib import Path
from mtabench.pipeline.publish import publish
publish(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def test_publish_killed_mid_copy_is_cleaned_up_by_the_next(tmp_path):
    big = tmp_path / "big.duckdb"
    with duckdb.connect(str(big)) as con:  # large enough that writing its copy takes a while
        con.execute("create table main.filler as select i, md5(i::varchar) as h from range(20000000) t(i)")
    serving = tmp_path / "serving" / "mtabench.duckdb"
    serving.parent.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", KILLED_PUBLISH, str(big), str(serving)])
    deadline = time.monotonic() + 60
    leftovers: list = []
    while not leftovers and time.monotonic() < deadline:
        leftovers = [p for p in serving.parent.glob(".publishing-*.duckdb") if _size(p) > 0]
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert leftovers, "the child never started writing"
    assert leftovers[0].exists() and not serving.exists()  # killed before os.replace
    # a publish by a live process (this one) in the same folder must be left alone
    live = serving.parent / f".publishing-{os.getpid()}-inflight.duckdb"
    live.write_bytes(b"in progress")

    small = tmp_path / "small.duckdb"
    with duckdb.connect(str(small)) as con:
        con.execute("create table main.runs as select 'r1' as run_id")
    publish(small, serving)
    assert _tables(serving) == {"main.runs": 1, "publish_state.source": 1, "publish_state.runs": 0}
    assert sorted(serving.parent.iterdir()) == sorted([serving, live])


def test_compare_runs_is_published_from_a_spark_build_too(built_db, tmp_path):
    """Spark writes its marts and seeds as Parquet folders (<schema>.db/<table>/); the gathered
    DuckDB file holds both, so the serving file gets compare_runs() whatever the engine."""
    from mtabench.engines.spark.engine import copy_warehouse
    from mtabench.stats.compare_sql import create_compare_macro

    warehouse = tmp_path / "warehouse"
    with duckdb.connect(str(built_db), read_only=True) as src:
        for schema, table in (
            ("main", "minutes"),
            ("main", "dtrace_samples"),
            ("main", "runs"),
            ("reference", "student_t"),
        ):
            folder = warehouse / f"{schema}.db" / table
            folder.mkdir(parents=True)
            src.execute(f"copy {schema}.{table} to '{folder / 'part-00000.parquet'}' (format parquet)")
    gathered = tmp_path / "gathered.duckdb"
    with duckdb.connect(str(gathered)) as con:
        copy_warehouse(con, warehouse)
        assert create_compare_macro(con)
        pair = ("seed000-s12-disk-rw-8192-4096", "a-baseline-t5")
        got = con.execute("select * from compare_runs(?, ?) order by confidence", pair).fetchall()
    with duckdb.connect(str(built_db.parent / "serving" / built_db.name), read_only=True) as served:
        want = served.execute("select * from compare_runs(?, ?) order by confidence", pair).fetchall()
    assert len(got) == 6 and got == want
