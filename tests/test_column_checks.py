"""A model's column checks as one dbt test (dbt_project/tests/generic/column_checks.sql):
each planted bad value is counted under its column and check, with dbt's meanings (null
passes non_negative and accepted_values), and mtabench names them when the test fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from mtabench.paths import Paths
from mtabench.pipeline.dbt import DbtFailed, WarmDbt, run_dbt


def _copy(built_db: Path, tmp_path: Path) -> Path:
    """The session's build in a folder of its own (dbt's artifacts with it)."""
    data = tmp_path / "data"
    shutil.copytree(built_db.parent, data, ignore=shutil.ignore_patterns("serving", "*.wal"))
    return data / built_db.name


def _copy_with_every_run_pending(built_db: Path, tmp_path: Path) -> Path:
    """The session's build in a folder of its own, with every run pending: the per-run
    checks then read every run's rows, not only changed runs' (macros/per_run_checks.sql)."""
    db = _copy(built_db, tmp_path)
    with duckdb.connect(str(db)) as con:
        con.execute("delete from per_run_state.checked")
    return db


def test_failing_column_checks_are_named_with_their_rows(built_db, tmp_path):
    db = _copy_with_every_run_pending(built_db, tmp_path)
    with duckdb.connect(str(db)) as con:
        ids = [r[0] for r in con.execute("select run_id from main.runs order by run_id limit 6").fetchall()]
        plant = [
            ("total_messages = null", ids[0:3]),  # not_null: 3 rows
            ("pop3_sessions = -1", ids[3:5]),  # non_negative: 2 rows
            ("status = 'bogus'", ids[5:6]),  # accepted_values: 1 row
            ("status = null", ids[0:1]),  # not_null: 1 row; accepted_values lets null pass
            ("imap_sessions = null", ids[0:6]),  # null passes non_negative
        ]
        for assignment, runs in plant:
            con.execute(f"update main.runs set {assignment} where list_contains(?, run_id)", [runs])

    lines: list[str] = []
    paths = Paths(db=db, data_dir=db.parent)
    # through a dbt started ahead (as `mtabench run` does): its exit status and output too
    with pytest.raises(DbtFailed) as failed:
        run_dbt(paths, ["test", "--select", "column_checks_runs"], lines.append, warm=WarmDbt.start(paths))
    found = sorted(line for line in lines if line.startswith("column_checks_runs: "))
    assert found == [
        "column_checks_runs: pop3_sessions non_negative 2 row(s)",
        "column_checks_runs: status accepted_values 1 row(s)",
        "column_checks_runs: status not_null 1 row(s)",
        "column_checks_runs: total_messages not_null 3 row(s)",
    ]
    assert "Got 7 results" in str(failed.value)
    assert all(line in str(failed.value) for line in found)


def test_column_checks_pass_on_every_sample_run(built_db, tmp_path):
    """Every model's column checks, reading every sample run's rows, pass."""
    db = _copy_with_every_run_pending(built_db, tmp_path)
    lines: list[str] = []
    run_dbt(Paths(db=db, data_dir=db.parent), ["test", "--select", "test_name:column_checks"], lines.append)
    done = next(line for line in lines if line.startswith("Done."))
    counts = dict(part.split("=") for part in done.removeprefix("Done. ").split())
    assert int(counts["PASS"]) == int(counts["TOTAL"]) >= 40, done


def _test_messages(db: Path, lines: list[str]) -> None:
    run_dbt(Paths(db=db, data_dir=db.parent), ["test", "--select", "column_checks_messages"], lines.append)


def _run_ids(con, n: int) -> list[str]:
    """Runs with messages (their rows are what the planted faults touch)."""
    return [
        r[0]
        for r in con.execute(
            "select run_id from main.messages group by run_id order by run_id limit ?", [n]
        ).fetchall()
    ]


def test_unique_and_relationships_are_counted_under_their_columns(built_db, tmp_path):
    """A duplicated key and rows whose run is gone from `runs`, every run pending."""
    db = _copy_with_every_run_pending(built_db, tmp_path)
    with duckdb.connect(str(db)) as con:
        dup_run, gone_run = _run_ids(con, 2)
        con.execute("insert into main.messages from (from main.messages where run_id = ? limit 1)", [dup_run])
        orphans = con.execute("select count(*) from main.messages where run_id = ?", [gone_run]).fetchone()[0]
        # the model's per-run ledger lists the run too: one more orphan value
        ledger = con.execute(
            "select count(*) from per_run_state.builds where model = 'messages' and run_id = ?", [gone_run]
        ).fetchone()[0]
        con.execute("delete from main.runs where run_id = ?", [gone_run])
    assert orphans > 0 and ledger == 1

    lines: list[str] = []
    with pytest.raises(DbtFailed):
        _test_messages(db, lines)
    found = sorted(line for line in lines if line.startswith("column_checks_messages: "))
    assert found == [
        f"column_checks_messages: run_id -> runs.run_id relationships {orphans + ledger} row(s)",
        "column_checks_messages: run_id, queue_id, message_instance unique 1 row(s)",
    ]


def test_a_run_not_pending_is_still_checked_through_the_ledger(built_db, tmp_path):
    """Nothing pending (the session's build passed every check): the scoped read sees no
    row, but a run the model's ledger holds with no parent row still fails the test."""
    db = _copy(built_db, tmp_path)
    with duckdb.connect(str(db)) as con:
        (gone_run,) = _run_ids(con, 1)
        # every run folder passed at its state: dbt test's on-run-start finds none pending
        checked, folders = con.execute(
            "select (select count(*) from per_run_state.checked), (select count(*) from raw.runs)"
        ).fetchone()
        assert checked == folders > 0
        con.execute("delete from main.runs where run_id = ?", [gone_run])
    lines: list[str] = []
    with pytest.raises(DbtFailed):
        _test_messages(db, lines)
    assert [line for line in lines if line.startswith("column_checks_messages: ")] == [
        "column_checks_messages: run_id -> runs.run_id relationships 1 row(s)"
    ]
