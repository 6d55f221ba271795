"""The DAGs in dags/ parse in the project's Airflow 3 environment (envs/airflow), from a fresh clone.

Real Airflow, no mocks: scripts/airflow_env.sh sets the environment up (uv sync, metadata DB,
pool) in a temporary AIRFLOW_HOME, then the Airflow CLI parses dags/ directly (--local).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import airflow_env

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def env(tmp_path_factory, airflow_home) -> dict[str, str]:
    root = tmp_path_factory.mktemp("airflow-parse")
    return airflow_env(airflow_home, MTABENCH_DATA=str(root / "data"), MTABENCH_INBOX=str(root / "inbox"))


def airflow(env: dict[str, str], *args: str) -> str:
    proc = subprocess.run(["airflow", *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"airflow {' '.join(args)}:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    return proc.stdout


def test_setup_is_idempotent_and_fast(env):
    import time

    t0 = time.monotonic()
    again = airflow_env(Path(env["AIRFLOW_HOME"]))
    assert time.monotonic() - t0 < 20
    assert again["AIRFLOW__API__HOST"] == "127.0.0.1"
    home = Path(env["AIRFLOW_HOME"])
    for secret in ("secrets.env", "simple_auth_manager_passwords.json"):
        assert (home / secret).stat().st_mode & 0o077 == 0, f"{secret} readable by others"
    assert "mtabench_duckdb" in airflow(env, "pools", "get", "mtabench_duckdb")


def json_output(out: str):
    """The JSON document of a CLI's output (warnings may precede it on stdout)."""
    lines = out.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(("[", "{"))), None)
    assert start is not None, out
    return json.loads("\n".join(lines[start:]))


def test_dags_parse_without_import_errors(env):
    out = airflow(env, "dags", "list-import-errors", "--local", "-o", "json")
    assert json_output(out) == [], out


def test_dags_listed(env):
    dags = {d["dag_id"] for d in json_output(airflow(env, "dags", "list", "--local", "-o", "json"))}
    assert {"mtabench_inbox", "mtabench_serving_report", "mtabench_spark"} <= dags


def test_spark_dag_ingests_builds_on_spark_and_reports(env):
    """mtabench_spark: three tasks in a line, the two that open the DuckDB file in its pool;
    run by hand unless MTABENCH_SPARK_SCHEDULE names a cron."""
    tasks = airflow(env, "tasks", "list", "mtabench_spark").split()
    assert tasks == ["build_on_spark", "ingest", "problems"]
    code = (
        "import json\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        "import sys\n"
        "dag = DagBag(sys.argv[1]).get_dag('mtabench_spark')\n"
        "print(json.dumps({'schedule': getattr(dag.timetable, 'expression', None),\n"
        "    'max_active_runs': dag.max_active_runs,\n"
        "    'pools': {t.task_id: t.pool for t in dag.tasks},\n"
        "    'down': {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks}}))\n"
    )
    got = {}
    for schedule in ("none", "0 3 * * *"):
        proc = subprocess.run(
            ["python", "-c", code, str(REPO / "dags" / "mtabench_spark.py")],
            env={**env, "PYTHONPATH": str(REPO), "MTABENCH_SPARK_SCHEDULE": schedule},
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        got[schedule] = json.loads(proc.stdout.splitlines()[-1])
    dag = got["none"]
    assert dag["max_active_runs"] == 1
    assert dag["down"] == {
        "ingest": ["build_on_spark", "problems"],
        "build_on_spark": ["problems"],
        "problems": [],
    }
    assert dag["pools"]["ingest"] == dag["pools"]["build_on_spark"] == "mtabench_duckdb"
    assert dag["schedule"] is None and got["0 3 * * *"]["schedule"] == "0 3 * * *"


def test_one_dbt_build_and_a_sensor_per_node(env):
    """Cosmos WATCHER: one producer task runs `dbt build`; each model and seed has a sensor, and a
    model's sensor also answers for the model's tests (no separate test sensors)."""
    tasks = set(airflow(env, "tasks", "list", "mtabench_inbox").split())
    assert {"ingest", "validate", "publish"} <= tasks
    assert not tasks & {"scan", "anything_to_do"}, "scan and ingest are one task (one process)"
    assert "dbt.dbt_producer_watcher" in tasks
    project = REPO / "dbt_project"
    models = {p.stem for p in (project / "models").rglob("*.sql")}
    seeds = {p.stem for p in (project / "seeds").glob("*.csv")}
    assert models and seeds
    missing = {m for m in models if f"dbt.{m}_run" not in tasks}
    missing |= {s for s in seeds if f"dbt.{s}_seed" not in tasks}
    assert not missing, f"no Cosmos sensor for {sorted(missing)}"
    sensors = {t for t in tasks if t.startswith("dbt.") and not t.startswith("dbt.dbt_producer_watcher")}
    assert len(sensors) == len(models) + len(seeds), sorted(sensors - {f"dbt.{m}_run" for m in models})
    # no task per test, and none builds one model on its own (the old one-dbt-process-per-node design)
    assert not [t for t in tasks if t.endswith((".test", "_test", "_model_build"))]


def test_dags_test_builds_its_execution_api_for_the_latest_version_only(env):
    """`airflow dags test` builds an in-process Execution API: with the DAG file's patch it
    routes the task SDK's version alone (Airflow's other versions cost ~3 s per process), and
    still answers it; any other command leaves Airflow's app as it is (every version)."""
    code = (
        "import json, sys, httpx\n"
        "from airflow.api_fastapi.execution_api.app import InProcessExecutionAPI\n"
        "from airflow.sdk.api.datamodels._generated import API_VERSION\n"
        "from mtabench.airflow.dags_test import serve_latest_api_version_only\n"
        "patched = serve_latest_api_version_only(['airflow', *sys.argv[1:]])\n"
        "api = InProcessExecutionAPI()\n"
        "with httpx.Client(transport=api.transport, base_url='http://in-process.invalid') as c:\n"
        "    status = c.get('/health', headers={'Airflow-API-Version': API_VERSION}).status_code\n"
        "print(json.dumps({'patched': patched, 'status': status, 'client': API_VERSION,\n"
        "                  'versions': sorted(api.app.router.versioned_routers)}))\n"
    )
    run_env = {**env, "PYTHONPATH": str(REPO)}
    out = {}
    for argv in (("dags", "test", "mtabench_inbox"), ("dags", "list")):
        proc = subprocess.run(
            ["python", "-c", code, *argv], env=run_env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        out[argv[1]] = json.loads(proc.stdout.splitlines()[-1])
    test, other = out["test"], out["list"]
    assert test["patched"] and test["status"] == 200
    assert test["versions"] == [test["client"]]
    assert not other["patched"] and other["status"] == 200
    assert test["client"] in other["versions"] and len(other["versions"]) > 1
