"""The project's Airflow services (scripts/airflow_services.sh) driven from Python, over the REST
API on loopback: start, log in, unpause a DAG, trigger a run and wait for it, clear a task.

Used by bench/airflow_bench.py --scheduler and tests/test_airflow_scheduler.py (the same real
api-server, scheduler with the LocalExecutor, dag-processor and triggerer `make airflow-up`
starts). Standard library only: it runs in the data venv, beside the Airflow one.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FINISHED = ("success", "failed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_of(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@dataclass
class DagRun:
    """A finished DAG run as the scheduler recorded it, with its task instances by task id."""

    run: dict[str, Any]
    task_instances: list[dict[str, Any]]
    wall_s: float

    @property
    def seconds(self) -> float:
        """From queued to ended, by the scheduler's clock (not the polling's)."""
        return time_of(self.run["end_date"]) - time_of(self.run["queued_at"])

    @property
    def tasks(self) -> dict[str, dict[str, Any]]:
        return {t["task_id"]: t for t in self.task_instances if t.get("map_index", -1) < 0}


@dataclass
class AirflowServices:
    """`env` must be the project's Airflow environment (scripts/airflow_env.sh), with
    MTABENCH_AIRFLOW_PORT, MTABENCH_AIRFLOW_USER and MTABENCH_AIRFLOW_PASSWORD set."""

    env: dict[str, str]
    log: Path
    token: str = field(default="", repr=False)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.env['MTABENCH_AIRFLOW_PORT']}"

    def _script(self, action: str, check: bool) -> None:
        with self.log.open("a") as out:
            cmd = ["bash", str(REPO / "scripts" / "airflow_services.sh"), action]
            subprocess.run(cmd, env=self.env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, check=check)

    def start(self, dag_id: str, timeout: float = 300, unpause: bool = True) -> float:
        """Start the services, log in, wait until `dag_id` is parsed, unpause it (the DAGs start
        unpaused: `unpause=False` leaves that to them); seconds taken."""
        t0 = time.monotonic()
        self._script("start", check=True)
        body = {
            "username": self.env["MTABENCH_AIRFLOW_USER"],
            "password": self.env["MTABENCH_AIRFLOW_PASSWORD"],
        }
        self.token = self.call("POST", "/auth/token", body)["access_token"]
        self.wait(lambda: self.call("GET", f"/api/v2/dags/{dag_id}"), timeout, f"{dag_id} parsed")
        if unpause:
            self.call("PATCH", f"/api/v2/dags/{dag_id}", {"is_paused": False})
        return time.monotonic() - t0

    def stop(self) -> None:
        self._script("stop", check=False)

    def call(self, method: str, path: str, body: dict | None = None) -> dict:
        req = urllib.request.Request(self.base + path, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        data = json.dumps(body).encode() if body is not None else None
        with urllib.request.urlopen(req, data=data, timeout=30) as resp:
            return json.loads(resp.read() or b"{}")

    def wait(self, fn: Callable[[], Any], timeout: float, what: str, every: float = 1.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if out := fn():
                    return out
            except urllib.error.HTTPError:
                pass
            time.sleep(every)
        raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what} (services log {self.log})")

    def task_instances(self, dag_id: str, run_id: str) -> list[dict[str, Any]]:
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances?limit=500"
        return self.call("GET", path)["task_instances"]

    def trigger(self, dag_id: str, timeout: float = 1800) -> DagRun:
        """Trigger a run of `dag_id` and wait until it ends (success or failed)."""
        t0 = time.monotonic()
        run = self.call("POST", f"/api/v2/dags/{dag_id}/dagRuns", {"logical_date": None})
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run['dag_run_id']}"

        def done() -> dict | None:
            r = self.call("GET", path)
            return r if r["state"] in FINISHED else None

        run = self.wait(done, timeout, f"DAG run {run['dag_run_id']}", every=0.2)
        wall = time.monotonic() - t0
        return DagRun(run, self.task_instances(dag_id, run["dag_run_id"]), wall)

    def dag_runs(self, dag_id: str) -> dict[str, dict[str, Any]]:
        """Every run of `dag_id` by its run id."""
        runs = self.call("GET", f"/api/v2/dags/{dag_id}/dagRuns?limit=100")["dag_runs"]
        return {r["dag_run_id"]: r for r in runs}

    def next_run(self, dag_id: str, known: set[str], timeout: float = 1800) -> DagRun:
        """Wait for a run of `dag_id` not in `known` (one the scheduler started on its own: the
        inbox watcher's, or the cron's) to end; returns it."""
        t0 = time.monotonic()

        def ended() -> dict | None:
            new = [r for k, r in self.dag_runs(dag_id).items() if k not in known]
            first = min(new, key=lambda r: r["queued_at"] or r["run_after"], default=None)
            return first if first and first["state"] in FINISHED else None

        run = self.wait(ended, timeout, f"a new run of {dag_id}", every=0.2)
        return DagRun(run, self.task_instances(dag_id, run["dag_run_id"]), time.monotonic() - t0)

    def clear_task(self, dag_id: str, run_id: str, task_id: str, timeout: float = 600) -> dict[str, Any]:
        """Clear one task of a finished run (as the UI's Clear does) and wait for its new try to end."""
        body = {"dag_run_id": run_id, "task_ids": [task_id], "only_failed": False, "dry_run": False}
        self.call("POST", f"/api/v2/dags/{dag_id}/clearTaskInstances", body)
        path = f"/api/v2/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}"

        def ended() -> dict | None:
            ti = self.call("GET", path)
            return ti if ti["try_number"] > 1 and ti["state"] in ("success", "failed", "skipped") else None

        return self.wait(ended, timeout, f"{task_id} cleared and rerun", every=0.5)
