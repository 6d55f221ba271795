"""The Airflow services on loopback: start, trigger a DAG run through the REST API, stop.

scripts/airflow_services.sh starts api-server, scheduler, dag-processor and triggerer in a
temporary AIRFLOW_HOME on a free port; the test logs in (POST /auth/token, SimpleAuthManager),
unpauses and triggers mtabench_inbox (POST /api/v2/dags/{dag_id}/dagRuns), waits for the run to
succeed, checks that every listening socket of those process groups is on 127.0.0.1, and stops
the services.

By default the inbox is empty: the run executes ingest (which scans, finds nothing and skips)
through the LocalExecutor in the mtabench_duckdb pool and skips the rest, which keeps CI short.
MTABENCH_AIRFLOW_FULL_TEST=1 drops one sample run into the inbox instead: the whole pipeline runs
under the scheduler (ingest, one `dbt build` with a Cosmos sensor per model, GX, publish), and
the serving Asset then triggers mtabench_serving_report.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SERVICES = REPO / "scripts" / "airflow_services.sh"
FULL = os.environ.get("MTABENCH_AIRFLOW_FULL_TEST") == "1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    def __init__(self, base: str, user: str, password: str):
        self.base = base
        body = self.call("POST", "/auth/token", {"username": user, "password": password}, auth=False)
        self.token = body["access_token"]

    def call(self, method: str, path: str, body: dict | None = None, auth: bool = True) -> dict:
        req = urllib.request.Request(self.base + path, method=method)
        req.add_header("Content-Type", "application/json")
        if auth:
            req.add_header("Authorization", f"Bearer {self.token}")
        data = json.dumps(body).encode() if body is not None else None
        with urllib.request.urlopen(req, data=data, timeout=30) as resp:
            return json.loads(resp.read() or b"{}")

    def wait(self, what: str, fn, timeout: float, every: float = 2.0):
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            try:
                last = fn()
                if last:
                    return last
            except urllib.error.HTTPError as exc:
                last = f"HTTP {exc.code}"
            time.sleep(every)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last: {last})")

    def run_dag(self, dag_id: str, timeout: float) -> dict:
        run = self.call("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None})
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run['dag_run_id']}"

        def finished():
            r = self.call("GET", path)
            return r if r["state"] in ("success", "failed") else None

        return self.wait(f"{dag_id} run {run['dag_run_id']}", finished, timeout)

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str]:
        tis = self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances?limit=200")
        return {t["task_id"]: t["state"] for t in tis["task_instances"]}


def group_pids(pgids: list[int]) -> set[int]:
    out = subprocess.run(["ps", "-eo", "pid=,pgid="], capture_output=True, text=True, check=True).stdout
    return {int(p) for p, g in (line.split() for line in out.splitlines()) if int(g) in pgids}


def listening_sockets(pids: set[int]) -> list[tuple[str, int]]:
    """(local address, pid) of every listening TCP/UDP socket owned by one of pids."""
    out = subprocess.run(["ss", "-H", "-ltunp"], capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        cols = line.split()
        local = cols[4]
        for pid in map(int, re.findall(r"pid=(\d+)", line)):
            if pid in pids:
                found.append((local, pid))
    return found


@pytest.fixture(scope="module")
def services(tmp_path_factory):
    root = tmp_path_factory.mktemp("airflow-services")
    inbox = root / "inbox"
    inbox.mkdir()
    if FULL:
        shutil.copytree(REPO / "samples" / "runs" / "a-baseline-t5", inbox / "a-baseline-t5")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "VIRTUAL_ENV", "MTABENCH"))}
    env.update(
        MTABENCH_AIRFLOW_HOME=str(root / "airflow_home"),
        MTABENCH_AIRFLOW_PORT=str(free_port()),
        MTABENCH_AIRFLOW_USER="mtabench-test",
        MTABENCH_AIRFLOW_PASSWORD=secrets.token_urlsafe(16),
        MTABENCH_INBOX=str(inbox),
        MTABENCH_DATA=str(root / "data"),
        MTABENCH_INBOX_SCHEDULE="none",  # only the run this test triggers:
        MTABENCH_INBOX_WATCH="off",  # no cron, no inbox watcher
    )
    home = Path(env["MTABENCH_AIRFLOW_HOME"])
    start = subprocess.run(["bash", str(SERVICES), "start"], env=env, capture_output=True, text=True)
    try:
        assert start.returncode == 0, start.stdout + start.stderr
        pgids = [int((home / "run" / f"{s}.pid").read_text()) for s in SERVICE_NAMES]
        api = Api(
            f"http://127.0.0.1:{env['MTABENCH_AIRFLOW_PORT']}",
            env["MTABENCH_AIRFLOW_USER"],
            env["MTABENCH_AIRFLOW_PASSWORD"],
        )
        yield {"env": env, "api": api, "pgids": pgids, "root": root, "home": home}
    finally:
        stop = subprocess.run(["bash", str(SERVICES), "stop"], env=env, capture_output=True, text=True)
        assert stop.returncode == 0, stop.stdout + stop.stderr


SERVICE_NAMES = ("api-server", "scheduler", "dag-processor", "triggerer")


def test_health(services):
    health = services["api"].call("GET", "/api/v2/monitor/health", auth=False)
    assert health["metadatabase"]["status"] == "healthy"
    assert health["scheduler"]["status"] == "healthy"


def test_login_rejects_wrong_password(services):
    with pytest.raises(urllib.error.HTTPError) as exc:
        Api(services["api"].base, services["env"]["MTABENCH_AIRFLOW_USER"], "wrong")
    assert exc.value.code in (401, 403)


def test_trigger_dag_run_through_rest_api(services):
    api = services["api"]
    # the dag-processor must have parsed the DAGs (Cosmos runs `dbt ls` once, then caches)
    for dag_id in ("mtabench_inbox", "mtabench_serving_report"):
        api.wait(f"{dag_id} parsed", lambda d=dag_id: api.call("GET", f"/api/v2/dags/{d}"), 180)
        api.call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})
    run = api.run_dag("mtabench_inbox", timeout=900 if FULL else 300)
    states = api.task_states("mtabench_inbox", run["dag_run_id"])
    assert run["state"] == "success", states
    if not FULL:
        assert states["ingest"] == "skipped"
        assert states["publish"] == "skipped"
        return
    assert states["ingest"] == "success" and states["publish"] == "success"
    assert (services["root"] / "data" / "serving" / "mtabench.duckdb").exists()

    # the serving Asset's event schedules the downstream DAG
    def report_done():
        runs = api.call("GET", "/api/v2/dags/mtabench_serving_report/dagRuns")["dag_runs"]
        return next((r for r in runs if r["state"] in ("success", "failed")), None)

    report = api.wait("mtabench_serving_report run", report_done, 180)
    assert report["state"] == "success"


def test_listeners_on_loopback_only(services):
    pids = group_pids(services["pgids"])
    assert len(pids) >= len(SERVICE_NAMES)
    sockets = listening_sockets(pids)
    assert any(addr.endswith(f":{services['env']['MTABENCH_AIRFLOW_PORT']}") for addr, _ in sockets), sockets
    bad = [(a, p) for a, p in sockets if not a.startswith("127.0.0.1:")]
    assert not bad, f"listening beyond 127.0.0.1: {bad}"
