"""End to end: `airflow dags test mtabench_inbox` on a copy of samples/ in a temporary inbox.

Real Airflow 3 (envs/airflow), real Cosmos + dbt, real GX, no mocks. One module-scoped DAG run
ingests samples/ plus a truncated bundle; its published serving file must hold, per run, the
same mart rows as `mtabench run` on samples/ in a separate data folder (run concurrently), and
its last task (`problems`) fails naming the bundle. A later DAG run gets a run whose manifest
says timezone "+15:00" (real input: the manifest parser accepts any ±HH:MM offset, the landing
suite allows -12:00..+14:00) beside a good new run: the bad run is held back, the good one
publishes, `problems` names the held run; moved out of the inbox, the bad run leaves the
landing and the serving file and the next DAG run is green.
Ingest runs once per DAG run too (one task, one XCom entry per run key). dbt runs once per DAG
run (Cosmos WATCHER: one `dbt build` in the producer task, one sensor per model that also answers
for the model's tests); a failed dbt test fails the DAG at the build, shows on its model's
sensor and publishes nothing.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tarfile
from pathlib import Path

import conftest
import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
MARTS = ("runs", "minutes", "events", "error_bursts", "daily_capacity")
BROKEN = "broken-bundle.tar.gz"


def airflow_env(home: Path, **extra: str) -> dict[str, str]:
    return conftest.airflow_env(home, strip=("AIRFLOW", "VIRTUAL_ENV", "MTABENCH"), **extra)


def dags_test(env: dict[str, str], dag_id: str, log: Path) -> tuple[int, str]:
    proc = subprocess.run(
        ["airflow", "dags", "test", dag_id],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1200,
    )
    log.write_text(proc.stdout)
    return proc.returncode, proc.stdout


def task_states(env: dict[str, str], dag_id: str) -> dict[str, tuple[str | None, int]]:
    """(state, try_number) per task of the DAG's latest run, from the metadata DB."""
    with sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db") as db:
        (run_id,) = db.execute(
            "select run_id from dag_run where dag_id = ? order by id desc limit 1", [dag_id]
        ).fetchone()
        rows = db.execute(
            "select task_id, map_index, state, try_number from task_instance where dag_id = ? and run_id = ?",
            [dag_id, run_id],
        ).fetchall()
    return {(t if m < 0 else f"{t}[{m}]"): (s, n) for t, m, s, n in rows}


def task_times(env: dict[str, str], dag_id: str) -> dict[str, tuple[str, str]]:
    """(start, end) per task of the DAG's latest run (UTC, as stored: comparable as text)."""
    with sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db") as db:
        (run_id,) = db.execute(
            "select run_id from dag_run where dag_id = ? order by id desc limit 1", [dag_id]
        ).fetchone()
        rows = db.execute(
            "select task_id, start_date, end_date from task_instance"
            " where dag_id = ? and run_id = ? and map_index < 0 and start_date is not null",
            [dag_id, run_id],
        ).fetchall()
    return {t: (start, end) for t, start, end in rows}


def task_xcoms(env: dict[str, str], dag_id: str, task_id: str) -> dict[str, object]:
    """key -> value (JSON) of one task's XComs in the DAG's latest run, from the metadata DB."""
    with sqlite3.connect(Path(env["AIRFLOW_HOME"]) / "airflow.db") as db:
        (run_id,) = db.execute(
            "select run_id from dag_run where dag_id = ? order by id desc limit 1", [dag_id]
        ).fetchone()
        rows = db.execute(
            "select key, value from xcom where dag_id = ? and run_id = ? and task_id = ?",
            [dag_id, run_id, task_id],
        ).fetchall()
    return {k: json.loads(v) for k, v in rows}


def truncated_bundle(run_dir: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(run_dir, arcname=run_dir.name)
    data = buf.getvalue()
    return data[: len(data) // 2]


def per_run_counts(db: Path) -> dict[str, dict[str, int]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {
            m: dict(con.execute(f"select run_id, count(*) from main.{m} group by run_id").fetchall())
            for m in MARTS
        }


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    root = tmp_path_factory.mktemp("airflow-e2e")
    inbox, data, cli_data = root / "inbox", root / "data", root / "cli-data"
    shutil.copytree(SAMPLES, inbox)
    (inbox / BROKEN).write_bytes(truncated_bundle(SAMPLES / "runs" / "a-baseline-t5"))
    # a run copied in is whole after 1 s unchanged: each `dags test` starts well after that
    env = airflow_env(
        root / "airflow_home", MTABENCH_INBOX=str(inbox), MTABENCH_DATA=str(data), MTABENCH_INBOX_SETTLE_S="1"
    )

    # the reference: the CLI on samples/, in its own data folder, while Airflow runs
    cli_env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    cli_env["MTABENCH_DATA"] = str(cli_data)
    cli = subprocess.Popen(
        [sys.executable, "-m", "mtabench.cli.main", "run", str(SAMPLES)],
        cwd=REPO,
        env=cli_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    rc, out = dags_test(env, "mtabench_inbox", root / "dags-test-1.log")
    cli_out, _ = cli.communicate(timeout=600)
    assert cli.returncode == 0, cli_out[-3000:]
    states = task_states(env, "mtabench_inbox")
    # the truncated bundle fails the last task, after the rest published
    assert rc != 0 and states["problems"][0] == "failed", f"log {root / 'dags-test-1.log'}:\n{out[-6000:]}"
    assert states["publish"][0] == "success", f"log {root / 'dags-test-1.log'}:\n{out[-6000:]}"
    return {
        "root": root,
        "env": env,
        "inbox": inbox,
        "data": data,
        "serving": data / "serving" / "mtabench.duckdb",
        "cli_db": cli_data / "mtabench.duckdb",
    }


def test_published_marts_match_cli_per_run(pipeline):
    served, expected = per_run_counts(pipeline["serving"]), per_run_counts(pipeline["cli_db"])
    assert expected["runs"], "the CLI produced no runs"
    for mart in MARTS:
        assert served[mart] == expected[mart], mart


def test_every_task_ran_once(pipeline):
    states = task_states(pipeline["env"], "mtabench_inbox")
    assert states.pop("problems") == ("failed", 1)  # the truncated bundle (next test)
    assert all(s == "success" for s, _ in states.values()), states
    assert all(n == 1 for _, n in states.values()), "some task needed a retry"
    # one ingest task for every run: one XCom entry per run key, and one for the broken bundle
    assert states["ingest"] == ("success", 1)
    outcomes = task_xcoms(pipeline["env"], "mtabench_inbox", "ingest")
    outcomes.pop("return_value", None)
    keys = {
        f"{folder.name}/{p.name}" for folder in SAMPLES.iterdir() if folder.is_dir() for p in folder.iterdir()
    }
    assert set(outcomes) == keys | {BROKEN}
    assert outcomes[BROKEN]["errors"], "the broken bundle's error is not in its XCom entry"
    for key in keys:
        files = sum(1 for p in (SAMPLES / key).iterdir() if p.is_file())  # all new: all loaded
        assert (outcomes[key]["files"], outcomes[key]["loaded"], outcomes[key]["errors"]) == (
            files,
            files,
            [],
        )
    models = {p.stem for p in (REPO / "dbt_project" / "models").rglob("*.sql")}
    watched = {m for m in models if f"dbt.{m}_run" in states}
    assert watched == models, "a model has no sensor"


def test_one_dbt_build_then_one_sensor_per_node(pipeline):
    times = task_times(pipeline["env"], "mtabench_inbox")
    producer = "dbt.dbt_producer_watcher"
    _, built = times[producer]
    sensors = {t: se for t, se in times.items() if t.startswith("dbt.") and not t.startswith(producer)}
    models = sum(1 for _ in (REPO / "dbt_project" / "models").rglob("*.sql"))
    seeds = sum(1 for _ in (REPO / "dbt_project" / "seeds").glob("*.csv"))
    assert len(sensors) == models + seeds  # one per model (and its tests), one per seed
    early = sorted(t for t, (start, _) in sensors.items() if start < built)
    assert not early, f"sensors started before the dbt build ended: {early}"


def test_corrupt_bundle_recorded_and_rest_published(pipeline):
    with duckdb.connect(str(pipeline["serving"]), read_only=True) as con:
        status, message = con.execute(
            "select status, message from raw.files where path = ?", [BROKEN]
        ).fetchone()
    assert status == "error"
    assert message, "no reason recorded"
    # the DAG run is not green: its last task failed, naming the bundle and why
    log = (pipeline["root"] / "dags-test-1.log").read_text()
    assert "1 problem(s); the rest was published" in log and f"{BROKEN}: {message}" in log, log[-4000:]


def test_rescan_finds_nothing_and_short_circuits(pipeline):
    before, landing = sha(pipeline["serving"]), pipeline["data"] / "mtabench.duckdb"
    landed = (sha(landing), landing.stat().st_mtime_ns)
    rc, out = dags_test(pipeline["env"], "mtabench_inbox", pipeline["root"] / "dags-test-2.log")
    assert rc == 0, out[-4000:]
    states = task_states(pipeline["env"], "mtabench_inbox")
    assert states["ingest"][0] == "skipped"  # it scanned: every run unchanged, nothing unpublished
    runs = sum(1 for folder in SAMPLES.iterdir() if folder.is_dir() for _ in folder.iterdir())
    assert out.count("unchanged ") >= runs, out[-4000:]  # a log line per scanned run
    assert states["dbt.dbt_producer_watcher"][0] == "skipped"
    assert states["publish"][0] == "skipped"
    assert sha(pipeline["serving"]) == before
    assert (sha(landing), landing.stat().st_mtime_ns) == landed, "a scan that found nothing wrote the landing"


def test_downstream_dag_reads_serving_file(pipeline):
    rc, out = dags_test(pipeline["env"], "mtabench_serving_report", pipeline["root"] / "report.log")
    assert rc == 0, out[-4000:]
    n = len(per_run_counts(pipeline["serving"])["runs"])
    assert f"{n} runs" in out


def test_failed_dbt_test_fails_the_build_and_keeps_serving_file(pipeline):
    """A landing row the dbt tests reject (a file status outside accepted_values, as a faulty
    ingest could write) fails the one dbt build at once; its model's sensor fails on it."""
    serving, landing = pipeline["serving"], pipeline["data"] / "mtabench.duckdb"
    before = sha(serving)
    with duckdb.connect(str(landing)) as con:
        first = "select file_id, status from raw.files order by file_id limit 1"
        file_id, status = con.execute(first).fetchone()
        con.execute("update raw.files set status = 'tampered' where file_id = ?", [file_id])
    try:
        rc, out = dags_test(pipeline["env"], "mtabench_inbox", pipeline["root"] / "dags-test-dbt-fail.log")
        assert rc != 0
        states = task_states(pipeline["env"], "mtabench_inbox")
        assert states["dbt.dbt_producer_watcher"] == ("failed", 1), "a failed build must not be retried"
        assert states["dbt.stg_raw__files_run"] == ("failed", 1)  # the model built, a test failed
        assert "Tests for model 'model.mtabench.stg_raw__files' finished with status 'fail'" in out
        assert states["dbt.median_ci_ranks_seed"][0] == "success", "a node the failure does not touch"
        assert states["validate"][0] == "upstream_failed"
        assert states["publish"][0] == "upstream_failed"
        assert "column_checks_stg_raw__files" in out, out[-6000:]
        assert sha(serving) == before, "the serving file changed after a failed dbt test"
    finally:
        with duckdb.connect(str(landing)) as con:
            con.execute("update raw.files set status = ? where file_id = ?", [status, file_id])


def served(serving: Path) -> tuple[dict[str, str], set[str]]:
    with duckdb.connect(str(serving), read_only=True) as con:
        status = dict(con.execute("select run_id, status from main.runs").fetchall())
        minutes = {r[0] for r in con.execute("select distinct run_id from main.minutes").fetchall()}
    return status, minutes


def test_bad_run_is_held_back_and_leaves_when_taken_out(pipeline):
    """One bad run never stops the others: held back, the good new run publishes; taken out
    of the inbox, every row of it leaves the landing and the serving file."""
    inbox, serving, landing = pipeline["inbox"], pipeline["serving"], pipeline["data"] / "mtabench.duckdb"
    base = SAMPLES / "runs" / "a-baseline-t5"
    manifest = (base / "run.toml").read_text()
    bad, good = inbox / "runs" / "z-timezone-typo", inbox / "runs" / "z-good-new"
    shutil.copytree(base, bad)
    (bad / "run.toml").write_text(
        'timezone = "+15:00"\n' + manifest.replace('run_id = "a-baseline-t5"', 'run_id = "z-timezone-typo"')
    )
    shutil.copytree(base, good)
    (good / "run.toml").write_text(manifest.replace('run_id = "a-baseline-t5"', 'run_id = "z-good-new"'))

    rc, out = dags_test(pipeline["env"], "mtabench_inbox", pipeline["root"] / "dags-test-3.log")
    states = task_states(pipeline["env"], "mtabench_inbox")
    assert rc != 0 and states["problems"] == ("failed", 1), out[-6000:]
    assert "expect_column_values_to_be_between(column='utc_offset_minutes'" in out, out[-6000:]
    assert "z-timezone-typo: held back: [landing] raw_runs_offsets" in out, out[-6000:]
    for task in ("ingest", "dbt.dbt_producer_watcher", "validate", "publish"):
        assert states[task] == ("success", 1), (task, states[task])
    status, minutes = served(serving)
    assert status["z-timezone-typo"] == "held" and "z-timezone-typo" not in minutes
    assert status["z-good-new"] == "ok" and "z-good-new" in minutes

    shutil.move(bad, pipeline["root"] / "z-timezone-typo")  # taken out of the inbox
    rc, out = dags_test(pipeline["env"], "mtabench_inbox", pipeline["root"] / "dags-test-4.log")
    states = task_states(pipeline["env"], "mtabench_inbox")
    assert rc == 0, out[-6000:]
    assert all(s == "success" for s, _ in states.values()), states
    status, minutes = served(serving)
    assert "z-timezone-typo" not in status and "z-good-new" in minutes
    with duckdb.connect(str(landing), read_only=True) as con:
        left = con.execute(
            "select (select count(*) from raw.runs where run_key = 'runs/z-timezone-typo'),"
            " (select count(*) from raw.files where run_key = 'runs/z-timezone-typo')"
        ).fetchone()
    assert left == (0, 0)
