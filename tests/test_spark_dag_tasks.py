"""The task logic of mtabench_spark (mtabench/airflow/tasks.py), in the data venv: its ingest
stages for Spark what an ingest without the Parquet landing left unstaged, its build needs a
landing, and Spark's settings reach the CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import REPO, SAMPLES

from mtabench.airflow import tasks as at

RUN = "c-throttled-queue-backlog"


def staged_paths(data: Path) -> set[str]:
    return {
        json.loads(p.read_text())["path"]
        for p in (data / "landing" / "maillog_lines").glob("*/*/context.json")
    }


def test_parquet_ingest_stages_runs_landed_without_it(tmp_path):
    """The inbox DAG (no Parquet landing) landed a run; the Spark DAG's ingest finds nothing new,
    yet stages that run's maillogs, which the Spark build reads; after that it has nothing to do."""
    inbox, data = tmp_path / "inbox", tmp_path / "data"
    shutil.copytree(SAMPLES / "runs" / RUN, inbox / "runs" / RUN)
    env = {"MTABENCH_INBOX": str(inbox), "MTABENCH_DATA": str(data), "MTABENCH_INBOX_SETTLE_S": "0"}
    settings = at.Settings.from_env(env)
    first = at.ingest_new(settings)  # as mtabench_inbox's ingest
    assert set(first) == {f"runs/{RUN}"}
    assert staged_paths(data) == set()

    caught_up = at.ingest_new(settings, parquet=True)  # as mtabench_spark's
    maillogs = {f"runs/{RUN}/{p.name}" for p in (inbox / "runs" / RUN).glob("maillog*")}
    assert len(maillogs) == 2 and staged_paths(data) == maillogs
    assert caught_up[f"runs/{RUN}"]["loaded"] == 0, "staged, not loaded again"
    assert (data / "landing").is_dir()

    assert at.ingest_new(settings, parquet=True) == {}, "everything staged: nothing to do"


def test_run_without_ingest_needs_a_landing(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    env["MTABENCH_DATA"] = str(tmp_path / "data")
    proc = subprocess.run(
        [sys.executable, "-m", "mtabench.cli.main", "run", str(tmp_path), "--engine", "spark", "--no-ingest"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2 and "ingest first" in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "data" / "mtabench.duckdb").exists()


def test_spark_settings_reach_the_cli(tmp_path, monkeypatch):
    """The worker's Spark and object-store settings pass to the CLI as they are; the data venv
    comes first on PATH (Spark starts its Python workers as `python`); the Airflow venv's
    interpreter settings do not pass."""
    spark = {
        "MTABENCH_SPARK_MASTER": "spark://127.0.0.1:7077",
        "MTABENCH_SPARK_STORAGE": "s3a://bench/landing",
        "MTABENCH_SPARK_EXECUTOR_MEMORY": "3g",
        "MTABENCH_S3_ENDPOINT": "http://127.0.0.1:9000",
        "AWS_ACCESS_KEY_ID": "minio",
        "AWS_SECRET_ACCESS_KEY": "minio-secret",
        "AWS_REGION": "us-east-1",
    }
    for k, v in spark.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("PYTHONPATH", "/somewhere/airflow")
    monkeypatch.setenv("PATH", "/opt/airflow-venv/bin:/usr/bin")
    settings = at.Settings.from_env({"MTABENCH_DATA": str(tmp_path), "MTABENCH_VENV_BIN": "/data-venv/bin"})
    env = settings.cli_env()
    assert {k: env.get(k) for k in spark} == spark
    assert env["PATH"].split(os.pathsep) == ["/data-venv/bin", "/opt/airflow-venv/bin", "/usr/bin"]
    assert "PYTHONPATH" not in env
    assert settings.spark_schedule is None
    assert at.Settings.from_env({"MTABENCH_SPARK_SCHEDULE": "0 3 * * *"}).spark_schedule == "0 3 * * *"
