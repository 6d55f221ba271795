"""Checks that read only the runs that changed (docs/pipeline.md, per-run checks): the dbt tests
(dbt_project/macros/per_run_checks.sql) and the per-run GX checks (expectations/validate_scope.py)
still fail on a bad value in a new run, keep failing until it is fixed, and, as documented,
see a bad value planted in an unchanged run only when asked to check every run."""

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
# a queue sample with no maildrop count passes stg_queue__samples' tests (file-scoped) and
# makes int_queue__minutes.queue_sampled null, which its run-scoped not_null test rejects
RUN = "runs/a-baseline-t5"
QUEUE_TEST = "column_checks_int_queue__minutes"


def mtabench(data: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MTABENCH_DATA": str(data)}
    env.pop("MTABENCH_DB", None)
    return subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, check=False)


def ok(data: Path, *args: str) -> None:
    out = mtabench(data, *args)
    assert out.returncode == 0, f"mtabench {' '.join(args)}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"


def sql(db: Path, query: str, params: list | None = None) -> list:
    with duckdb.connect(str(db)) as con:
        return con.execute(query, params or []).fetchall()


def compiled_test(data: Path) -> str:
    return next((data / "dbt_target" / "run").rglob(f"{QUEUE_TEST}.sql")).read_text()


def queue_rows(run_id: str) -> str:
    """A predicate on raw.queue_samples: the samples of the run's folder."""
    return f"""file_id in (select f.file_id from raw.files f join raw.runs r using (run_key)
                          where r.run_id = '{run_id}')"""


def test_dbt_tests_check_new_runs_and_keep_failing_until_fixed(tmp_path):
    archive, data = tmp_path / "archive", tmp_path / "data"
    shutil.copytree(SAMPLES, archive)
    db = data / "mtabench.duckdb"
    ok(data, "ingest", str(archive))
    ok(data, "build")
    n_runs = sql(db, "select count(*) from raw.runs")[0][0]
    assert sql(db, "select count(*) from per_run_state.checked")[0][0] == n_runs

    ok(data, "build")  # nothing changed: every per-run test reads no rows
    assert sql(db, "select count(*) from per_run_state.pending") == [(0,)]
    assert "split_part(run_id, '#', 1) in (select folder_run_id from per_run_state.pending)" in compiled_test(
        data
    )

    # a new run with a negative count in its landing: the incremental build's test sees it
    copy_run(SAMPLES / RUN, archive / "added" / "a-baseline-t5", 9)
    ok(data, "ingest", str(archive))
    assert sql(db, f"select count(*) from raw.queue_samples where {queue_rows('a-baseline-t5~c9')}")[0][0] > 0
    sql(db, f"create table keep as select * from raw.queue_samples where {queue_rows('a-baseline-t5~c9')}")
    sql(db, f"update raw.queue_samples set maildrop = null where {queue_rows('a-baseline-t5~c9')}")
    for _ in range(2):  # a failed build leaves the run pending: the next build fails again
        out = mtabench(data, "build")
        assert out.returncode == 4, out.stdout[-2000:]
        assert QUEUE_TEST in out.stdout + out.stderr
        new_minutes = "from intermediate.int_queue__minutes where run_id = 'a-baseline-t5~c9'"
        (nulls,) = sql(db, f"select count(*) {new_minutes} and queue_sampled is null")[0]
        assert nulls > 0 and f"{QUEUE_TEST}: queue_sampled not_null {nulls} row(s)" in out.stdout + out.stderr
        assert sql(db, "select folder_run_id from per_run_state.pending") == [("a-baseline-t5~c9",)]
    sql(db, f"delete from raw.queue_samples where {queue_rows('a-baseline-t5~c9')}")
    sql(db, "insert into raw.queue_samples select * from keep")
    # the landing was mended behind ingest's back (no file hash changed): the per-run
    # incremental models (int_queue__minutes) are told to rebuild the run, as a changed file would
    sql(db, "delete from per_run_state.builds where run_id = 'a-baseline-t5~c9'")
    ok(data, "build")
    assert sql(db, "select count(*) from per_run_state.checked")[0][0] == n_runs + 1

    # the same bad value in a run that did not change: an incremental build does not look
    # (docs/pipeline.md: what the per-run checks cover); --full-refresh checks every run and fails
    sql(db, f"update raw.queue_samples set maildrop = null where {queue_rows('a-baseline-t5')}")
    ok(data, "build")
    out = mtabench(data, "build", "--full-refresh")
    assert out.returncode == 4 and QUEUE_TEST in out.stdout + out.stderr


def test_validate_checks_new_runs_and_keeps_failing_until_fixed(tmp_path):
    archive, data = tmp_path / "archive", tmp_path / "data"
    shutil.copytree(SAMPLES, archive)
    db = data / "mtabench.duckdb"
    ok(data, "ingest", str(archive))
    ok(data, "build")
    # every row read; passed, so recorded as validated like a scoped validate (the last part
    # below relies on it: an old run's bad value is not looked at again)
    ok(data, "validate", "--all-runs")
    n_runs = sql(db, "select count(*) from raw.runs")[0][0]
    assert sql(db, "select suite, count(*) from per_run_state.validated group by 1 order by 1") == [
        ("landing", n_runs),
        ("marts", n_runs),
    ]

    copy_run(SAMPLES / "runs/a-baseline-t5", archive / "added" / "a-baseline-t5", 9)
    ok(data, "ingest", str(archive))
    ok(data, "build")
    new = "run_id = 'a-baseline-t5~c9' and minute_offset = 3"
    (good,) = sql(db, f"select messages from main.minutes where {new}")[0]
    sql(db, f"update main.minutes set messages = -5 where {new}")
    for _ in range(2):  # not recorded as validated: the next validate fails again
        out = mtabench(data, "validate")
        assert out.returncode == 3, out.stdout[-2000:]
        assert "minutes: expect_column_values_to_be_between" in out.stderr
        assert "runs: a-baseline-t5~c9" in out.stderr
    sql(db, f"update main.minutes set messages = {good} where {new}")

    # a bad value in a run validated before and unchanged since: not looked at by default,
    # found with --all-runs
    old = "run_id = 'a-baseline-t5' and minute_offset = 3"
    sql(db, f"update main.minutes set messages = -5 where {old}")
    ok(data, "validate")
    assert sql(db, "select count(*) from per_run_state.validated where suite = 'marts'")[0][0] == n_runs + 1
    out = mtabench(data, "validate", "--all-runs")
    assert out.returncode == 3 and "runs: a-baseline-t5;" in out.stderr.replace("\n", ";"), out.stderr[-2000:]

    # a landing file changed behind ingest's back (its ledger row edited) is its run's new
    # state: the landing suite checks that run again and fails
    sql(db, "update raw.files set lines_noise = lines_noise + 1 where path like '%a-baseline-t5/postal%'")
    out = mtabench(data, "validate", "--suite", "landing")
    assert out.returncode == 3 and "unaccounted_lines" in out.stderr, out.stderr[-2000:]


def test_maillog_file_id_relationship_sees_a_gone_file_of_an_unchanged_run(tmp_path):
    """stg_maillog__lines' file_id relationship reads the pending runs' lines and the Parquet
    ledger (tests/generic/relationships_of_pending_files.sql): a file whose raw.files row is
    gone while its landed lines stay fails it, though no line of it is pending."""
    data = tmp_path / "data"
    db = data / "mtabench.duckdb"
    ok(data, "ingest", str(SAMPLES))
    ok(data, "build")
    with duckdb.connect(str(db)) as con:
        (fmt,) = con.execute(
            "delete from raw.files where file_id = (select min(file_id) from raw.parquet_files) "
            "returning format"
        ).fetchone()
        parts = con.execute(
            "select count(*) from raw.parquet_files where file_id not in (select file_id from raw.files)"
        ).fetchone()[0]
    assert fmt == "maillog" and parts >= 1
    out = mtabench(data, "build")
    assert out.returncode != 0
    log = (data / "logs" / "dbt.log").read_text()
    failed = [ln for ln in log.splitlines() if " FAIL " in ln]
    name = "relationships_of_pending_files_stg_maillog__lines_file_id"
    assert any(f"FAIL {parts} {name}" in ln for ln in failed), failed


def test_many_pending_runs_are_checked_as_every_row(built_db, tmp_path, monkeypatch):
    """Beyond MAX_SCOPED pending runs or files a check reads every row (a long IN list of
    literals cost 7x reading everything at 236x); up to it, exactly the pending runs."""
    from expectations import validate_scope
    from expectations.suites import SUITES

    db = tmp_path / "scope" / built_db.name
    db.parent.mkdir()
    shutil.copy(built_db, db)
    with duckdb.connect(str(db)) as con:
        assert validate_scope.pending(con, "marts", SUITES["marts"]).folder_run_ids == []  # all validated
        con.execute("delete from per_run_state.validated")  # as after a change of the model code
        runs = {r[0] for r in con.execute("select run_id from raw.runs").fetchall()}
        files = con.execute("select count(*) from raw.files").fetchone()[0]
        scope = validate_scope.pending(con, "marts", SUITES["marts"])
        assert set(scope.folder_run_ids) == runs and len(scope.file_ids) == files
        monkeypatch.setattr(validate_scope, "MAX_SCOPED", files - 1)  # one file too many
        assert validate_scope.pending(con, "marts", SUITES["marts"]) is None
        monkeypatch.setattr(validate_scope, "MAX_SCOPED", len(runs) - 1)
        assert validate_scope.pending(con, "marts", SUITES["marts"]) is None
