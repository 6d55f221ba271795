"""The Great Expectations gate: it passes on good data and stops publishing on bad data."""

from __future__ import annotations

import shutil

import duckdb
import pytest
from conftest import SAMPLES

from expectations.validate import ValidationFailed, validate
from mtabench.cli.main import main


def test_gate_fails_on_bad_marts_and_names_the_expectation(built_db, tmp_path):
    bad = tmp_path / "bad.duckdb"
    shutil.copy(built_db, bad)
    with duckdb.connect(str(bad)) as con:
        con.execute("update main.minutes set messages = -5 where minute_offset = 3")
        con.execute("update main.daily_capacity set sustained_msgs_per_day = sustained_msgs_per_day + 1")
    with pytest.raises(ValidationFailed) as exc:
        validate(bad, tmp_path / "gx", suites=["marts"])
    text = str(exc.value)
    assert "minutes: expect_column_values_to_be_between" in text and "'messages'" in text
    assert "daily_capacity" in text and "sustained_day_residual" in text
    assert exc.value.docs.exists()


def test_failed_validation_keeps_the_previous_serving_file(built_db, data_dir, tmp_path, capsys):
    serving = data_dir / "serving" / "mtabench.duckdb"
    before = serving.read_bytes()
    bad = tmp_path / "bad.duckdb"
    shutil.copy(built_db, bad)
    shutil.copytree(built_db.with_name(built_db.name + ".parquet"), bad.with_name(bad.name + ".parquet"))
    with duckdb.connect(str(bad)) as con:  # a landing-level defect the next build keeps
        con.execute("update raw.files set lines_noise = lines_noise + 1 where format = 'postal'")
    # The same archive again: every file is unchanged, so ingest keeps the tampered ledger rows
    # (a different archive would drop those runs as no longer present).
    rc = main(["run", str(SAMPLES), "--db", str(bad), "--serving-db", str(serving)])
    assert rc == 3
    assert "unaccounted_lines" in capsys.readouterr().err
    assert serving.read_bytes() == before


def test_checks_count_every_row_in_duckdb_and_gx_judges_the_failing_ones(built_db, tmp_path):
    """Validate counts in DuckDB (memory flat in the marts' size) and hands GX only failing
    rows: a bad value on the row the scan reaches last, a duplicate, and more bad rows than
    GX is shown are all found, with exact counts over every row."""
    import expectations.validate as v

    bad = tmp_path / "bad.duckdb"
    shutil.copy(built_db, bad)
    with duckdb.connect(str(bad)) as con:
        n = con.execute("select count(*) from main.messages").fetchone()[0]
        # a negative size on the row the scan reaches last, and a copy of the first row appended
        last = con.execute("select run_id, queue_id, message_instance from main.messages").fetchall()[-1]
        con.execute(
            "update main.messages set size = -7 where run_id = ? and queue_id = ? and message_instance = ?",
            list(last),
        )
        con.execute("insert into main.messages select * from main.messages limit 1")
        # more negative delays than GX is handed
        many = 3 * v.MOST_UNEXPECTED
        con.execute(
            "update main.messages set delay = -1 where (run_id, queue_id, message_instance) in "
            "(select (run_id, queue_id, message_instance) from main.messages where delay is not null "
            f"order by run_id, queue_id limit {many})"
        )
        assert con.execute("select count(*) from main.messages where delay < 0").fetchone()[0] == many
    with pytest.raises(ValidationFailed) as exc:
        validate(bad, tmp_path / "gx", suites=["marts"])
    failures = {(f.check, f.expectation, f.kwargs.get("column")): f.detail for f in exc.value.failures}
    size = failures[("messages", "expect_column_values_to_be_between", "size")]
    assert size.startswith(f"1 of {n + 1} rows unexpected, e.g. [-7]"), size
    assert f"runs: {last[0]}" in size
    delay = failures[("messages", "expect_column_values_to_be_between", "delay")]
    assert delay.startswith(f"{many} of {n + 1} rows unexpected, e.g. [-1"), delay
    dup = failures[("messages", "expect_compound_columns_to_be_unique", None)]
    assert dup.startswith(f"2 of {n + 1} rows unexpected"), dup
    assert len(exc.value.failures) == 3, exc.value.failures


def test_mailbox_checks_fail_on_bad_mailbox_figures(built_db, tmp_path):
    """Every mailbox-side expectation the Mailbox side dashboard relies on can fail: one bad
    value each, in the recorded mailbox runs, and each failure names its column."""
    bad = tmp_path / "bad.duckdb"
    shutil.copy(built_db, bad)
    f, g, h = "'f-mailbox-pop'", "'g-mailbox-imap25'", "'h-rabid-alone'"
    tampered = {
        ("minutes", "expect_column_pair_values_a_to_be_greater_than_b", "zero_byte_sessions"): (
            f"update main.minutes set zero_byte_sessions = mailbox_sessions + 1 where run_id = {f} "
            "and minute_offset = 1"
        ),
        ("minutes", "expect_column_values_to_be_between", "bytes_retrieved"): (
            f"update main.minutes set bytes_retrieved = -1 where run_id = {h} and minute_offset = 0"
        ),
        ("minutes", "expect_column_values_to_be_between", "other_service_sessions"): (
            f"update main.minutes set pop3_sessions = mailbox_sessions + 1 where run_id = {h} "
            "and minute_offset = 2"
        ),
        ("minutes", "expect_column_values_to_be_between", "received"): (
            f"update main.minutes set received = -3 where run_id = {g} and minute_offset = 3"
        ),
        ("runs", "expect_column_values_to_be_between", "msgs_retrieved"): (
            f"update main.runs set msgs_retrieved = -1 where run_id = {g}"
        ),
        ("runs", "expect_column_pair_values_a_to_be_greater_than_b", "zero_byte_sessions"): (
            f"update main.runs set zero_byte_sessions = mailbox_sessions + 1 where run_id = {h}"
        ),
        ("runs", "expect_column_pair_values_a_to_be_greater_than_b", "sustained_retrievals_per_min"): (
            "update main.runs set peak_retrievals_per_min = sustained_retrievals_per_min - 1 "
            f"where run_id = {f}"
        ),
        ("daily_capacity", "expect_column_values_to_be_between", "retrievals_day_residual"): (
            "update main.daily_capacity set sustained_retrievals_per_day = sustained_retrievals_per_day + 1 "
            f"where run_id = {f}"
        ),
    }
    with duckdb.connect(str(bad)) as con:
        for sql in tampered.values():
            con.execute(sql)
    with pytest.raises(ValidationFailed) as exc:
        validate(bad, tmp_path / "gx", suites=["marts"])
    failed = {
        (x.check, x.expectation, x.kwargs.get("column_B") or x.kwargs.get("column")): x.detail
        for x in exc.value.failures
    }
    assert set(tampered) <= set(failed), set(tampered) - set(failed)
    assert failed[("runs", "expect_column_values_to_be_between", "msgs_retrieved")].startswith("1 of ")
    assert len(failed) == len(tampered), set(failed) - set(tampered)


def test_gx_judges_only_the_checks_with_failing_rows(built_db, tmp_path):
    """A check whose rows all pass in DuckDB hands GX nothing (an empty frame passes every
    expectation of the suites): a passing validate does not even import GX; a failing one
    runs GX on the failing checks, and its Data Docs show those checks only."""
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from expectations.validate import validate; "
        f"docs = validate(Path({str(built_db)!r}), Path({str(tmp_path / 'gx-ok')!r})); "
        "print(docs, 'great_expectations' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["None", "False"], out.stdout + out.stderr

    bad = tmp_path / "bad.duckdb"
    shutil.copy(built_db, bad)
    with duckdb.connect(str(bad)) as con:
        con.execute("update main.minutes set messages = -5 where minute_offset = 3")
    with pytest.raises(ValidationFailed) as exc:
        validate(bad, tmp_path / "gx", suites=["marts"])
    assert {f.check for f in exc.value.failures} == {"minutes"}
    judged = {p.stem for p in (exc.value.docs.parent / "validations").rglob("*.html")}
    assert judged == {"mtabench-marts.minutes"}, judged
