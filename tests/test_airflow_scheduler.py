"""mtabench_inbox under the real Airflow services, as `make airflow-up` runs it.

Real api-server, scheduler (LocalExecutor), dag-processor and triggerer on a free loopback port
(scripts/airflow_services.sh, driven over REST by mtabench/airflow_services.py), on an inbox of
one sample run. What `airflow dags test` (tests/test_airflow_e2e.py) cannot show: the dbt
sensors start in the triggerer (`start_from_trigger`) and end there without a worker process;
a cleared sensor reruns its model in a worker; a failed dbt test fails its model's sensor from
the triggerer, and nothing is published.
"""

from __future__ import annotations

import hashlib
import secrets
import shutil
from pathlib import Path

import conftest
import duckdb
import pytest

from mtabench.airflow_services import AirflowServices, free_port

REPO = Path(__file__).resolve().parents[1]
RUN = "c-throttled-queue-backlog"
DAG = "mtabench_inbox"
PRODUCER = "dbt.dbt_producer_watcher"
WORKER_TASKS = ("ingest", PRODUCER, "validate", "publish")


def sensors(tasks: dict[str, dict]) -> dict[str, dict]:
    return {t: ti for t, ti in tasks.items() if t.endswith(("_run", "_seed")) and t.startswith("dbt.")}


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    root = tmp_path_factory.mktemp("airflow-scheduler")
    inbox, data = root / "inbox", root / "data"
    shutil.copytree(REPO / "samples" / "runs" / RUN, inbox / "runs" / RUN)
    env = conftest.airflow_env(
        root / "airflow_home",
        strip=("AIRFLOW", "VIRTUAL_ENV", "MTABENCH"),
        MTABENCH_INBOX=str(inbox),
        MTABENCH_DATA=str(data),
        MTABENCH_INBOX_SCHEDULE="none",
        MTABENCH_AIRFLOW_PORT=str(free_port()),
        MTABENCH_AIRFLOW_USER="test",
        MTABENCH_AIRFLOW_PASSWORD=secrets.token_urlsafe(16),
    )
    svc = AirflowServices(env, root / "services.log")
    try:
        svc.start(DAG)
        first = svc.trigger(DAG, timeout=900)
        yield {"svc": svc, "first": first, "data": data, "home": Path(env["AIRFLOW_HOME"])}
    finally:
        svc.stop()


def test_sensors_end_in_the_triggerer_without_a_worker(services):
    run = services["first"]
    tasks = run.tasks
    assert run.run["state"] == "success", {t: ti["state"] for t, ti in tasks.items()}
    found = sensors(tasks)
    models = {p.stem for p in (REPO / "dbt_project" / "models").rglob("*.sql")}
    assert {f"dbt.{m}_run" for m in models} <= set(found)
    # a task run by a worker records the worker's host; one ended by the triggerer never had one
    in_worker = {t: ti["hostname"] for t, ti in found.items() if ti["hostname"]}
    assert not in_worker, f"sensors that ran in a worker: {in_worker}"
    assert {t: (ti["state"], ti["try_number"]) for t, ti in found.items()} == {
        t: ("success", 1) for t in found
    }
    for task in WORKER_TASKS:
        assert tasks[task]["state"] == "success" and tasks[task]["hostname"], (task, tasks[task])
    with duckdb.connect(str(services["data"] / "serving" / "mtabench.duckdb"), read_only=True) as con:
        assert con.execute("select list(run_id) from main.runs").fetchone()[0] == [RUN]


def test_sensors_wait_only_for_the_build_and_validate_only_for_the_build(services):
    """Each sensor's only upstream is the producer, so all decide in one round; they report
    beside validate, which waits for the build alone."""
    svc = services["svc"]
    tasks = {t["task_id"]: t for t in svc.call("GET", f"/api/v2/dags/{DAG}/tasks")["tasks"]}
    found = sensors(tasks)
    assert found
    assert set(found) | {"validate"} <= set(tasks[PRODUCER]["downstream_task_ids"])
    assert {task: info["downstream_task_ids"] for task, info in found.items()} == {t: [] for t in found}
    upstream_of_validate = {t for t, info in tasks.items() if "validate" in info["downstream_task_ids"]}
    assert upstream_of_validate == {PRODUCER}


def test_cleared_sensor_reruns_its_model_in_a_worker(services):
    svc, run_id = services["svc"], services["first"].run["dag_run_id"]
    ti = svc.clear_task(DAG, run_id, "dbt.runs_run")
    assert (ti["state"], ti["try_number"]) == ("success", 2), ti
    assert ti["hostname"], "a cleared sensor reruns its model (Cosmos's fallback) in a worker"


def test_failed_dbt_test_fails_its_sensor_from_the_triggerer(services):
    svc, data, home = services["svc"], services["data"], services["home"]
    serving = data / "serving" / "mtabench.duckdb"
    before = hashlib.sha256(serving.read_bytes()).hexdigest()
    with duckdb.connect(str(data / "mtabench.duckdb")) as con:
        file_id, status = con.execute(
            "select file_id, status from raw.files order by file_id limit 1"
        ).fetchone()
        con.execute("update raw.files set status = 'tampered' where file_id = ?", [file_id])
    try:
        run = svc.trigger(DAG, timeout=900)
        tasks = run.tasks
        assert run.run["state"] == "failed"
        assert tasks[PRODUCER]["state"] == "failed"
        failed = tasks["dbt.stg_raw__files_run"]
        assert failed["state"] == "failed" and not failed["hostname"], failed
        assert tasks["validate"]["state"] == "upstream_failed"
        assert tasks["publish"]["state"] == "upstream_failed"
        logs = (
            home
            / "logs"
            / f"dag_id={DAG}"
            / f"run_id={run.run['dag_run_id']}"
            / "task_id=dbt.stg_raw__files_run"
        )
        text = "".join(p.read_text(errors="replace") for p in logs.rglob("*") if p.is_file())
        assert "Tests for model 'model.mtabench.stg_raw__files' finished with status 'fail'" in text
        assert hashlib.sha256(serving.read_bytes()).hexdigest() == before
    finally:
        with duckdb.connect(str(data / "mtabench.duckdb")) as con:
            con.execute("update raw.files set status = ? where file_id = ?", [status, file_id])
