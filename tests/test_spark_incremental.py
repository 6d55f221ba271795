"""Spark builds incrementally: its marts are Delta tables in a catalog that outlives the run.

A first `mtabench run --engine spark` on a copy of samples/, then one run added to the copy
and a second Spark build into the same data folder: the marts' Delta logs have more than one
version (the tables were kept and added to, not rebuilt from nothing), only the added run
was built by the per-run models, and the gathered marts equal a full DuckDB build of the
grown archive (EXCEPT ALL both ways).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
from conftest import SAMPLES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from scale_bench import copy_run  # noqa: E402

CLI = [sys.executable, "-m", "mtabench.cli.main"]
ADDED = "a-baseline-t5~c9"


def mtabench(data: Path, *args: str) -> str:
    env = {**os.environ, "MTABENCH_DATA": str(data)}
    env.pop("MTABENCH_DB", None)
    # the executors' Python is the one running the tests
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    out = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, f"mtabench {' '.join(args)}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def differences(a: Path, b: Path) -> dict[str, tuple[int, int]]:
    """Per mart of `a`: rows only in a, rows only in b (doubles rounded to 6 decimals: sums
    in another order differ in their last bits)."""
    out = {}
    with duckdb.connect() as con:
        con.execute(f"attach '{a}' as a (read_only)")
        con.execute(f"attach '{b}' as b (read_only)")
        marts = [
            t
            for (t,) in con.execute(
                "select table_name from duckdb_tables() where database_name = 'a' and schema_name = 'main'"
            ).fetchall()
        ]
        assert {"runs", "messages", "minutes", "comparisons"} <= set(marts)
        for t in marts:
            cols = con.execute(
                "select column_name, data_type from information_schema.columns"
                " where table_catalog = 'a' and table_schema = 'main' and table_name = ?"
                " order by ordinal_position",
                [t],
            ).fetchall()
            names = ", ".join(f'round("{c}", 6)' if ty in ("DOUBLE", "FLOAT") else f'"{c}"' for c, ty in cols)
            a_rows, b_rows = (f"select {names} from {db}.main.{t}" for db in ("a", "b"))
            only_a = con.execute(f"select count(*) from ({a_rows} except all {b_rows})").fetchone()[0]
            only_b = con.execute(f"select count(*) from ({b_rows} except all {a_rows})").fetchone()[0]
            if only_a or only_b:
                out[t] = (only_a, only_b)
    return out


def test_spark_adds_a_run_to_its_delta_marts(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    archive = tmp_path / "archive"
    shutil.copytree(SAMPLES, archive)
    spark, full = tmp_path / "spark", tmp_path / "full"
    mtabench(spark, "run", str(archive), "--engine", "spark", "--no-publish")
    messages = spark / "spark" / "warehouse" / "main.db" / "messages"
    first = DeltaTable(str(messages)).version()

    copy_run(SAMPLES / "runs/a-baseline-t5", archive / "added/a-baseline-t5", 9)
    mtabench(spark, "run", str(archive), "--engine", "spark", "--no-publish")
    mtabench(full, "run", str(archive), "--no-publish")

    # the same table, added to: its log goes on from the first build's version
    table = DeltaTable(str(messages))
    assert table.version() > first >= 0
    ops = [h["operation"] for h in table.history()]
    assert "WRITE" in ops and "CREATE TABLE AS SELECT" in ops
    assert (spark / "spark" / "metastore_db").is_dir()

    gathered = spark / "spark" / "mtabench.duckdb"
    assert differences(full / "mtabench.duckdb", gathered) == {}
    assert differences(gathered, full / "mtabench.duckdb") == {}
    with duckdb.connect(str(gathered), read_only=True) as con:
        assert con.execute("select count(*) from main.messages where run_id = ?", [ADDED]).fetchone()[0] > 0
