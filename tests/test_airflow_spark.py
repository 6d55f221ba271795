"""End to end: `airflow dags test mtabench_spark` on an inbox of three sample runs.

Real Airflow 3 (envs/airflow), real Spark (local[*]) and dbt-spark, real GX, no mocks. The DAG
ingests the inbox with the Parquet landing, builds the marts with dbt on Spark, validates and
publishes them; its serving file must hold the rows a DuckDB-engine `mtabench run` of the same
runs publishes (in its own data folder, run beside the DAG), mart by mart, both ways.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import conftest
import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]
DAG = "mtabench_spark"
# a backlog with two maillogs, a run with error bursts, a mailbox-only run (dovecot, no SMTP side)
RUNS = ("c-throttled-queue-backlog", "d-errors-rcpt-rejects", "h-rabid-alone")
MARTS = ("runs", "minutes", "events", "messages", "daily_capacity", "error_bursts")
FLOATS = ("DOUBLE", "FLOAT")


def copy_runs(archive: Path) -> Path:
    for run in RUNS:
        shutil.copytree(conftest.SAMPLES / "runs" / run, archive / "runs" / run)
    return archive


def latest_run(home: Path) -> tuple[dict[str, tuple[str, int]], float]:
    """(state, try_number) per task of the DAG's latest run, and the run's seconds."""
    with sqlite3.connect(home / "airflow.db") as db:
        run_id, seconds = db.execute(
            "select run_id, (julianday(end_date) - julianday(start_date)) * 86400 from dag_run"
            " where dag_id = ? order by id desc limit 1",
            [DAG],
        ).fetchone()
        rows = db.execute(
            "select task_id, state, try_number from task_instance where dag_id = ? and run_id = ?",
            [DAG, run_id],
        ).fetchall()
    return {t: (s, n) for t, s, n in rows}, seconds


@pytest.fixture(scope="module")
def dag_run(tmp_path_factory, airflow_home):
    root = tmp_path_factory.mktemp("airflow-spark")
    inbox, data, cli_data = copy_runs(root / "inbox"), root / "data", root / "cli-data"
    env = conftest.airflow_env(
        airflow_home,
        strip=("AIRFLOW", "VIRTUAL_ENV", "MTABENCH"),
        MTABENCH_INBOX=str(inbox),
        MTABENCH_DATA=str(data),
        MTABENCH_INBOX_SETTLE_S="1",  # the runs were copied before the set-up: whole by now
    )
    # the independent side: the DuckDB engine on the same runs (another copy, its own data folder)
    cli_env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    cli_env["MTABENCH_DATA"] = str(cli_data)
    cli = subprocess.Popen(
        [sys.executable, "-m", "mtabench.cli.main", "run", str(copy_runs(root / "archive"))],
        cwd=REPO,
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    t0 = time.monotonic()
    proc = subprocess.run(
        ["airflow", "dags", "test", DAG],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1500,
    )
    took = time.monotonic() - t0
    (root / "dags-test.log").write_text(proc.stdout)
    cli_out, _ = cli.communicate(timeout=600)
    assert cli.returncode == 0, cli_out[-3000:]
    states, seconds = latest_run(airflow_home)
    print(f"`airflow dags test {DAG}`: {took:.1f} s, the DAG run {seconds:.1f} s")
    return {
        "env": env,
        "rc": proc.returncode,
        "out": proc.stdout,
        "states": states,
        "data": data,
        "serving": data / "serving" / "mtabench.duckdb",
        "reference": cli_data / "serving" / "mtabench.duckdb",
    }


def test_every_task_succeeds_once(dag_run):
    assert dag_run["rc"] == 0, dag_run["out"][-6000:]
    assert dag_run["states"] == {t: ("success", 1) for t in ("ingest", "build_on_spark", "problems")}
    assert "mtabench run" in dag_run["out"] and "--engine spark --no-ingest" in dag_run["out"]


def test_built_on_spark_from_the_parquet_landing(dag_run):
    """The ingest task staged every mail log for Spark, whole; Spark wrote each mart."""
    data = dag_run["data"]
    sides = [json.loads(p.read_text()) for p in (data / "landing" / "maillog_lines").glob("*/*/context.json")]
    staged = {s["path"]: s["lines"] for s in sides}
    logs = {  # Postfix's and Dovecot's logs, by file name, with their lines as `wc -l` counts them
        f"runs/{run}/{p.name}": conftest.raw_line_count(p)
        for run in RUNS
        for p in (conftest.SAMPLES / "runs" / run).iterdir()
        if p.name.startswith(("maillog", "dovecot.log"))
    }
    assert len(logs) >= 3 and staged == logs
    for mart in MARTS:  # a Delta table each: its log and its Parquet parts
        table = data / "spark" / "warehouse" / "main.db" / mart
        assert list((table / "_delta_log").glob("*.json")) and list(table.glob("part-*.parquet")), mart


def _select(con, catalog: str, mart: str) -> str:
    """The mart's columns; doubles to 6 decimals (Spark and DuckDB may sum in another order)."""
    cols = con.execute(
        "select column_name, data_type from information_schema.columns"
        " where table_catalog = ? and table_schema = 'main' and table_name = ? order by ordinal_position",
        [catalog, mart],
    ).fetchall()
    assert cols, f"{catalog}.main.{mart} missing"
    return ", ".join(f'round("{c}", 6)' if t in FLOATS else f'"{c}"' for c, t in cols)


@pytest.mark.parametrize("mart", MARTS)
def test_served_marts_equal_the_duckdb_engine(dag_run, mart):
    con = duckdb.connect()
    con.execute(f"attach '{dag_run['serving']}' as spark (read_only)")
    con.execute(f"attach '{dag_run['reference']}' as ref (read_only)")
    spark, ref = _select(con, "spark", mart), _select(con, "ref", mart)
    assert spark == ref, "column names, order and types"
    n = con.execute(f"select count(*) from ref.main.{mart}").fetchone()[0]
    assert n > 0, f"the reference has no {mart} rows: the comparison would prove nothing"
    only_spark = f"select {spark} from spark.main.{mart} except all select {ref} from ref.main.{mart}"
    only_ref = f"select {ref} from ref.main.{mart} except all select {spark} from spark.main.{mart}"
    assert con.execute(only_spark).fetchall() == [], f"{mart}: rows only the Spark DAG served"
    assert con.execute(only_ref).fetchall() == [], f"{mart}: rows only the DuckDB engine has"


def test_a_failed_spark_build_fails_the_task_and_keeps_the_serving_file(dag_run):
    """build_on_spark as the worker runs it, with a Spark setting in the worker's environment
    that Spark cannot start with: the setting reaches Spark, the task fails with the CLI's tail
    (retried: a failure to start may be transient) and the serving file stays the one published
    before."""
    serving = dag_run["serving"]
    before = hashlib.sha256(serving.read_bytes()).hexdigest()
    # the DAG's build left nothing to do: without its inputs' digest the build runs again
    (dag_run["data"] / "spark" / "built-from.sha256").unlink()
    code = "from mtabench.airflow import tasks as at\nat.build_on_spark(at.Settings.from_env())\n"
    env = {**dag_run["env"], "PYTHONPATH": str(REPO), "MTABENCH_SPARK_DRIVER_MEMORY": "lots"}
    proc = subprocess.run(["python", "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode != 0
    assert "Invalid maximum heap size: -Xmxlots" in proc.stderr, proc.stderr[-3000:]  # the JVM's own words
    raised = "mtabench.airflow.tasks.CliFailed: mtabench run "  # not AirflowFailException
    assert raised in proc.stderr and "--engine spark --no-ingest exited 1:" in proc.stderr, proc.stderr[
        -3000:
    ]
    tail = proc.stderr.split("--no-ingest exited 1:", 1)[1]
    assert "Error" in tail, proc.stderr[-3000:]  # the CLI's own last lines: why Spark did not start
    assert hashlib.sha256(serving.read_bytes()).hexdigest() == before
