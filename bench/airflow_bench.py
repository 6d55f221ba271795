"""Airflow benchmark: what the `mtabench_inbox` DAG costs next to the CLI, on samples/.

    uv run --frozen python bench/airflow_bench.py [--scheduler] [--keep DIR] [--new-run runs/a-baseline-t5]
        [--settle SECONDS]

In one temporary folder (AIRFLOW_HOME, inbox, two data folders), one after the other:

1. parse: the DAG file once (`airflow dags list-import-errors --local`), which fills Cosmos's
   cache of the dbt project (`dbt ls`); a scheduler does this once, not per run;
2. CLI full: `mtabench run <inbox>` (the inbox holds a copy of samples/) in its own data folder;
3. DAG full: `airflow dags test mtabench_inbox` on the same inbox, in the DAG's data folder;
4. a new run folder lands in the inbox (a copy of --new-run under a new name and run_id);
5. CLI one new run: `mtabench run <inbox>` again (ingests only the new run, rebuilds, publishes);
6. DAG one new run: `airflow dags test mtabench_inbox` again.

With --scheduler, the DAG runs go through the real services instead (scripts/airflow_services.sh:
api-server on a free loopback port, scheduler with the LocalExecutor, dag-processor, triggerer;
started before step 2, stopped at the end), and nobody triggers them: the DAG starts unpaused
and the inbox watcher (an asset watcher in the triggerer) starts each run. DAG full is the run
the watcher starts for the samples in the inbox; its time is from queued to the run's end as
the scheduler recorded it (`end_date - queued_at`). The services' start-up and the
dag-processor's first parse are not part of any run. Then Superset comes up on the DAG's serving
file (scripts/superset.sh up, a free loopback port) and step 6 becomes "drop -> dashboard": the
new run folder is copied into the inbox, and the clock runs from the end of the copy to (a) the
watcher's DAG run ending, (b) the serving file holding the run and (c) Superset's data for the
Runs chart (its REST chart-data endpoint, as the dashboard asks it, data cache included)
listing it, and prints where that time went (drop_split). Goal: under 60 s. The CLI's
one-new-run step runs after it, not beside it.

Every step must succeed, and both serving files must hold the same runs. Figures only, no
assertion on time: the machine is shared and noisy, so compare the ratios within one run. It
also prints Airflow's own time in each DAG run (the wall time minus the CLI and dbt processes
the tasks start, from the `airflow dags test` log): steadier under load than the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from ingest.settled import DEFAULT_SETTLE_S
from mtabench.airflow.services import AirflowServices, DagRun, free_port, time_of

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
VENV_BIN = Path(sys.executable).parent


@dataclass
class Step:
    name: str
    seconds: float
    log: Path


def run_step(name: str, cmd: list[str], env: dict[str, str], log: Path) -> Step:
    t0 = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.run(cmd, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, check=False)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        tail = "\n".join(log.read_text().splitlines()[-40:])
        sys.exit(f"{name} failed (exit {proc.returncode}, log {log}):\n{tail}")
    print(f"  {name:<22} {seconds:7.1f} s   (log {log})", flush=True)
    return Step(name, seconds, log)


def airflow_env(home: Path, **extra: str) -> dict[str, str]:
    """The project's Airflow environment (scripts/airflow_env.sh), set up in `home`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "VIRTUAL_ENV", "MTABENCH"))}
    env.update(MTABENCH_AIRFLOW_HOME=str(home), **extra)
    script = REPO / "scripts" / "airflow_env.sh"
    proc = subprocess.run(["bash", str(script), "env", "-0"], env=env, capture_output=True, check=True)
    # first-time set-up messages precede the first variable on stdout
    pairs = (kv.rsplit("\n", 1)[-1] for kv in proc.stdout.decode().split("\0"))
    return dict(kv.split("=", 1) for kv in pairs if "=" in kv)


def add_run(inbox: Path, src: Path, run_id: str) -> None:
    """A copy of `src` as a new run folder with its own run_id (as another recording would be)."""
    dst = inbox / "runs" / run_id
    shutil.copytree(src, dst)
    manifest = dst / "run.toml"
    text = re.sub(r'(?m)^run_id\s*=\s*"[^"]*"', f'run_id = "{run_id}"', manifest.read_text())
    manifest.write_text(text)


def watcher_step(services: AirflowServices, name: str, log: Path, known: set[str]) -> tuple[Step, DagRun]:
    """Wait for the run the inbox watcher starts (not in `known`); its time from the scheduler's record."""
    r = services.next_run("mtabench_inbox", known, timeout=1800)
    log.write_text(json.dumps({"run": r.run, "task_instances": r.task_instances}, indent=1, default=str))
    if r.run["state"] != "success":
        failed = sorted(t for t, ti in r.tasks.items() if ti["state"] not in ("success", "skipped"))
        sys.exit(
            f"{name} failed: tasks {failed} (services logs under {services.env['MTABENCH_AIRFLOW_HOME']})"
        )
    print(
        f"  {name:<22} {r.seconds:7.1f} s   ({r.run['run_type']}; run and task instances in {log})",
        flush=True,
    )
    return Step(name, r.seconds, log), r


RUNS_CHART = "Runs: peak, sustained and conservative (p10) rates, daily capacity"


class SupersetCharts:
    """Superset on the DAG's serving file (scripts/superset.sh up), asked for a chart's data
    over its REST API as the dashboard asks it (Superset's data cache included)."""

    def __init__(self, data: Path, home: Path, log: Path):
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("MTABENCH", "SUPERSET"))}
        self.port = free_port()
        self.env.update(
            MTABENCH_DATA=str(data), MTABENCH_SUPERSET_HOME=str(home), MTABENCH_SUPERSET_PORT=str(self.port)
        )
        self.home, self.log = home, log
        self.session = None
        self.chart_id = None

    def sh(self, action: str) -> None:
        with self.log.open("a") as out:
            cmd = ["bash", str(REPO / "scripts" / "superset.sh"), action]
            proc = subprocess.run(
                cmd, env=self.env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, check=False
            )
        if proc.returncode != 0 and action != "stop":
            sys.exit(f"superset {action} failed (log {self.log})")

    def up(self) -> None:
        import requests

        self.sh("up")
        base = f"http://127.0.0.1:{self.port}"
        s = requests.Session()
        password = (self.home / "admin_password").read_text().strip()
        r = s.post(
            f"{base}/api/v1/security/login",
            json={"username": "admin", "password": password, "provider": "db", "refresh": False},
            timeout=60,
        )
        r.raise_for_status()
        s.headers["Authorization"] = f"Bearer {r.json()['access_token']}"
        charts = s.get(f"{base}/api/v1/chart/?q=(page_size:100)", timeout=60).json()["result"]
        self.chart_id = next(c["id"] for c in charts if c["slice_name"].startswith(RUNS_CHART.split(",")[0]))
        self.session, self.base = s, base

    def lists(self, run_id: str) -> bool:
        """The Runs chart's data, filtered on `run_id` as a dashboard filter would (the chart
        pages its rows: unfiltered, its first page only), holds the run."""
        saved = self.session.get(f"{self.base}/api/v1/chart/{self.chart_id}", timeout=60).json()
        query = json.loads(saved["result"]["query_context"])
        for q in query["queries"]:
            q["filters"] = [*q.get("filters", []), {"col": "run_id", "op": "IN", "val": [run_id]}]
        r = self.session.post(f"{self.base}/api/v1/chart/data", json=query, timeout=120)
        r.raise_for_status()
        return any(row.get("run_id") == run_id for res in r.json()["result"] for row in res["data"])


def drop_to_dashboard(
    services: AirflowServices,
    charts: SupersetCharts,
    inbox: Path,
    src: Path,
    run_id: str,
    serving: Path,
    log: Path,
) -> tuple[Step, dict[str, float], list[tuple[str, float]]]:
    """Copy a new run into the inbox and time, from the end of the copy: the watcher's DAG run
    ending, the serving file holding the run, Superset's chart data listing it; and where the
    time went (drop_split)."""
    known = set(services.dag_runs("mtabench_inbox"))
    if charts.lists(run_id):
        sys.exit(f"{run_id} is on the chart before it was dropped")
    add_run(inbox, src, run_id)
    t0, t0_wall = time.monotonic(), time.time()
    marks: dict[str, float] = {}
    run = None
    deadline = t0 + 900
    seen_stat = None
    # light on the machine it measures: a stat of the serving file every 0.2 s (DuckDB opened
    # only when the file changed), Superset and Airflow's REST API only once the file holds the
    # run (the DAG run ends after its publish)
    while time.monotonic() < deadline and len(marks) < 3:
        if "serving file" not in marks:
            stat = _stat(serving)
            if stat != seen_stat and stat is not None and run_id in served_runs(serving):
                marks["serving file"] = time.monotonic() - t0
            seen_stat = stat
        if "serving file" in marks and "Superset chart data" not in marks and charts.lists(run_id):
            marks["Superset chart data"] = time.monotonic() - t0
        if "Superset chart data" in marks and "DAG run ended" not in marks:
            new = [r for k, r in services.dag_runs("mtabench_inbox").items() if k not in known]
            if new and all(r["state"] in ("success", "failed") for r in new):
                run = new[-1]
                marks["DAG run ended"] = time_of(run["end_date"]) - t0_wall  # as the scheduler recorded it
        time.sleep(0.2 if "serving file" not in marks else 0.5)
    if len(marks) < 3:
        log.write_text(json.dumps({"marks": marks, "run": run}, indent=1, default=str))
        sys.exit(f"drop -> dashboard did not finish in 900 s: {marks} (log {log})")
    tis = services.task_instances("mtabench_inbox", run["dag_run_id"])
    events = services.call(
        "GET", f"/api/v2/dags/mtabench_inbox/dagRuns/{run['dag_run_id']}/upstreamAssetEvents"
    )["asset_events"]
    split = drop_split(t0_wall, marks, run, tis, events)
    log.write_text(
        json.dumps({"marks": marks, "split": split, "run": run, "task_instances": tis, "events": events},
                   indent=1, default=str)
    )  # fmt: skip
    if run["state"] != "success" or run["run_type"] != "asset_triggered":
        sys.exit(f"the DAG run after the drop: {run['state']}, {run['run_type']} (log {log})")
    step = Step("drop -> dashboard", marks["Superset chart data"], log)
    shown = ", ".join(f"{k} {v:.1f}" for k, v in marks.items())
    print(f"  {step.name:<22} {step.seconds:7.1f} s   ({shown}; log {log})", flush=True)
    return step, marks, split


SPLIT_TASKS = ("ingest", "dbt.dbt_producer_watcher", "validate", "publish")


def drop_split(
    t0: float, marks: dict[str, float], run: dict, tis: list[dict], events: list[dict]
) -> list[tuple[str, float]]:
    """Where drop -> dashboard went, in order, from the end of the copy (wall clock `t0`): the
    settle wait and the watcher's poll (to the asset event), the scheduler creating the DAG run,
    then each task from its start to its end and the scheduler's gap before it (queueing and the
    task process's start), the bench seeing the published file, and Superset's query."""
    by_id = {t["task_id"]: t for t in tis if t.get("map_index", -1) < 0}
    event = min(time_of(e["timestamp"]) for e in events)
    out = [("settle + watcher poll", event - t0), ("DAG run created", time_of(run["queued_at"]) - event)]
    prev = time_of(run["queued_at"])
    for task in SPLIT_TASKS:
        ti = by_id[task]
        start, end = time_of(ti["start_date"]), time_of(ti["end_date"])
        name = task.removeprefix("dbt.")
        out += [(f"gap before {name}", start - prev), (name, end - start)]
        prev = end
    out.append(("serving file seen", marks["serving file"] - (prev - t0)))
    out.append(("Superset chart data", marks["Superset chart data"] - marks["serving file"]))
    return out


def task_seconds(log: Path) -> float:
    """Seconds the run's tasks spent in their CLI and dbt work, from the scheduler's task
    instances: ingest, the producer, validate and publish (start to end of each)."""
    tis = json.loads(log.read_text())["task_instances"]
    keep = ("ingest", "dbt.dbt_producer_watcher", "validate", "publish")
    return sum(
        time_of(t["end_date"]) - time_of(t["start_date"])
        for t in tis
        if t["task_id"] in keep and t["start_date"] and t["end_date"]
    )


STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z ")


def subprocess_seconds(log: Path) -> float:
    """Seconds a DAG run spent in its CLI and dbt processes, from the `airflow dags test` log:
    a task's `running .../mtabench ...` line to its `Post Execute` (or its end), and Cosmos's
    `Running command` (dbt) to `Command exited`. The rest of the DAG's time is Airflow's own."""
    stamped = [
        (time_of(m.group(1)), line) for line in log.read_text().splitlines() if (m := STAMP.match(line))
    ]
    total, start, ends = 0.0, None, ()
    for t, line in stamped:
        if start is None:
            if "running " in line and "/mtabench " in line:
                start, ends = t, ("::group::Post Execute", "[DAG TEST] end task")
            elif "Running command" in line:
                start, ends = t, ("Command exited",)
        elif any(e in line for e in ends):
            total, start = total + t - start, None
    return total


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_ino


def served_runs(serving: Path) -> set[str]:
    with duckdb.connect(str(serving), read_only=True) as con:
        return {r[0] for r in con.execute("select run_id from main.runs").fetchall()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keep", type=Path, help="work here and keep it (default: a temporary folder)")
    ap.add_argument("--new-run", default="runs/a-baseline-t5", help="sample run copied as the new run")
    ap.add_argument(
        "--scheduler", action="store_true", help="DAG runs through the real services, not `dags test`"
    )
    ap.add_argument(
        "--settle",
        type=float,
        default=DEFAULT_SETTLE_S,
        help="seconds a dropped run must stay unchanged (--scheduler)",
    )
    args = ap.parse_args()

    root = args.keep or Path(tempfile.mkdtemp(prefix="mtabench-airflow-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    inbox, cli_data, dag_data, logs = root / "inbox", root / "cli-data", root / "dag-data", root / "logs"
    for d in (inbox, cli_data, dag_data):
        shutil.rmtree(d, ignore_errors=True)
    logs.mkdir(exist_ok=True)
    shutil.copytree(SAMPLES, inbox)
    print(f"work folder {root}; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)

    extra = {}
    if args.scheduler:
        extra = dict(
            MTABENCH_AIRFLOW_PORT=str(free_port()),
            MTABENCH_AIRFLOW_USER="bench",
            MTABENCH_AIRFLOW_PASSWORD=secrets.token_urlsafe(16),
        )
    af_env = airflow_env(
        root / "airflow_home",
        MTABENCH_INBOX=str(inbox),
        MTABENCH_DATA=str(dag_data),
        MTABENCH_INBOX_SCHEDULE="none",
        MTABENCH_INBOX_SETTLE_S=str(args.settle),
        MTABENCH_INBOX_WATCH="on" if args.scheduler else "off",
        **extra,
    )
    cli_env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    cli_env["MTABENCH_DATA"] = str(cli_data)
    cli = [str(VENV_BIN / "mtabench"), "run", str(inbox)]
    dag = ["airflow", "dags", "test", "mtabench_inbox"]

    parse = run_step(
        "parse (cold cache)",
        ["airflow", "dags", "list-import-errors", "--local"],
        af_env,
        logs / "parse.log",
    )
    services = charts = None
    marks: dict[str, float] = {}
    new_id = "zz-bench-new-run"
    if args.scheduler:
        services = AirflowServices({**os.environ, **af_env, **extra}, logs / "services.log")
        up = services.start("mtabench_inbox", unpause=False)  # the DAG starts unpaused
        print(f"  services up, mtabench_inbox parsed in {up:.1f} s", flush=True)

    try:
        if services:  # the watcher starts the runs; the CLI runs after each, not beside it
            dag_full, _ = watcher_step(services, "DAG full (watcher)", logs / "dag-full.json", set())
            cli_full = run_step("CLI full", cli, cli_env, logs / "cli-full.log")
            charts = SupersetCharts(dag_data, root / "superset", logs / "superset.log")
            charts.up()
            serving = dag_data / "serving" / "mtabench.duckdb"
            dag_new, marks, split = drop_to_dashboard(
                services, charts, inbox, SAMPLES / args.new_run, new_id, serving, logs / "drop.json"
            )
            cli_new = run_step("CLI one new run", cli, cli_env, logs / "cli-new.log")
        else:
            cli_full = run_step("CLI full", cli, cli_env, logs / "cli-full.log")
            dag_full = run_step("DAG full", dag, af_env, logs / "dag-full.log")
            add_run(inbox, SAMPLES / args.new_run, new_id)
            cli_new = run_step("CLI one new run", cli, cli_env, logs / "cli-new.log")
            dag_new = run_step("DAG one new run", dag, af_env, logs / "dag-new.log")
    finally:
        if charts:
            charts.sh("stop")
        if services:
            services.stop()

    cli_runs = served_runs(cli_data / "serving" / "mtabench.duckdb")
    dag_runs = served_runs(dag_data / "serving" / "mtabench.duckdb")
    if cli_runs != dag_runs or new_id not in dag_runs:
        sys.exit(f"serving files differ: CLI only {cli_runs - dag_runs}, DAG only {dag_runs - cli_runs}")

    print()
    if services:  # the DAG's one-new-run figure: from the end of the copy to the run's end
        dag_new = Step("drop -> DAG run end", marks["DAG run ended"], dag_new.log)
    print(f"{'scheduler' if services else 'dags test':24}{'CLI s':>8}{'DAG s':>8}{'DAG/CLI':>9}")
    for what, c, d in (("full (samples/)", cli_full, dag_full), ("one new run", cli_new, dag_new)):
        print(f"{what:<24}{c.seconds:8.1f}{d.seconds:8.1f}{d.seconds / c.seconds:8.2f}x")
    if services:
        shown = ", ".join(f"{k} {v:.1f} s" for k, v in marks.items())
        print(f"drop -> dashboard (from the end of the copy; settle {args.settle:g} s): {shown}; goal 60 s")
        print("  where it went: " + ", ".join(f"{k} {v:.1f}" for k, v in split))
        own = dag_full.seconds - task_seconds(dag_full.log)
        print(
            f"Airflow's own time in the full run (minus its ingest, producer, validate, publish): {own:.1f} s"
        )
    else:
        own = {s.name: s.seconds - subprocess_seconds(s.log) for s in (dag_full, dag_new)}
        print(
            f"Airflow's own time (DAG wall minus its CLI and dbt processes): full {own[dag_full.name]:.1f} s,"
            f" one new run {own[dag_new.name]:.1f} s; at 1.5x the CLI's one new run it may be"
            f" {1.5 * cli_new.seconds - (dag_new.seconds - own[dag_new.name]):.1f} s"
        )
    print(f"DAG parse with a cold Cosmos cache (once per project change): {parse.seconds:.1f} s")
    print(f"both serving files hold the same {len(dag_runs)} runs; load average now {os.getloadavg()[0]:.1f}")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
