"""Maillog marts against pflogsumm and the recorded runs' manifests."""

from __future__ import annotations

import re
import shutil
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES, SAMPLES, found
from test_maillog_parser import pflogsumm_totals

from mtabench.cli.main import main

RUNS_WITH_MAILLOG = [p.parent.name for p in found(SAMPLES.glob("runs/*/maillog.gz"), "maillogs")]
TOTALS = ("received", "delivered", "deferred", "bounced", "rejected")


def pflogsumm(path: Path) -> dict[str, int]:
    totals = pflogsumm_totals(path)  # runs the Debian pflogsumm binary on the decompressed log
    return {k: totals[k] for k in TOTALS}


@pytest.mark.parametrize("run_id", RUNS_WITH_MAILLOG)
def test_run_totals_equal_pflogsumm(con, run_id):
    row = con.execute(f"select {', '.join(TOTALS)} from runs where run_id = ?", [run_id]).fetchone()
    assert dict(zip(TOTALS, row, strict=True)) == pflogsumm(SAMPLES / "runs" / run_id / "maillog.gz")


def test_misc_maillog_with_deferrals_bounces_rejects_equals_pflogsumm(tmp_path):
    log = FIXTURES / "misc/postfix37_maillog_file.log.gz"
    run = tmp_path / "archive" / "misc-postfix37"
    run.mkdir(parents=True)
    shutil.copy(log, run / "maillog.gz")
    db = tmp_path / "t.duckdb"
    assert main(["ingest", str(tmp_path / "archive"), "--db", str(db)]) == 0
    assert main(["build", "--db", str(db)]) == 0
    with duckdb.connect(str(db), read_only=True) as con:
        row = con.execute(f"select {', '.join(TOTALS)} from runs").fetchone()
        kinds = dict(con.execute("select kind, count(*) from events group by 1").fetchall())
    expected = pflogsumm(log)
    assert dict(zip(TOTALS, row, strict=True)) == expected
    assert expected["deferred"] > 0 and expected["bounced"] > 0 and expected["rejected"] > 0
    assert kinds["reject"] == expected["rejected"] and kinds["bounced"] == expected["bounced"]


def test_throttled_run_backs_up_and_the_drain_delivers_everything(con):
    received, delivered, drained, growth, injected = con.execute(
        "select received, delivered, delivered_incl_drain, queue_growth_per_min, injected_msgs_per_min "
        "from runs where run_id = 'c-throttled-queue-backlog'"
    ).fetchone()
    assert growth > 0 and delivered < received
    assert drained == received  # with maillog.drain.gz every received message is delivered
    statuses = con.execute(
        "select final_status, count(*) from messages where run_id = 'c-throttled-queue-backlog' group by 1"
    ).fetchall()
    assert statuses == [("sent", received)]
    basis = con.execute(
        "select capacity_rate_source from daily_capacity where run_id = 'c-throttled-queue-backlog'"
    ).fetchone()[0]
    assert basis.startswith("delivery")
    # the log's backlog tracks the sampled queue (queue.txt) within the messages in flight
    rows = con.execute(
        "select queue_backlog, queue_sampled from minutes where run_id = 'c-throttled-queue-backlog' "
        "and has_load_row and queue_sampled is not null"
    ).fetchall()
    assert rows and all(abs(b - q) <= 0.05 * q + 40 for b, q in rows)


def test_smtp_source_run_times(con):
    text = (SAMPLES / "runs/e-smtp-source-s5/smtp-source.out").read_text()
    stamps = [datetime.fromisoformat(m[:26]) for m in re.findall(r"^(?:start|end) (\S+)Z$", text, re.M)]
    expected_inject = (stamps[1] - stamps[0]).total_seconds()
    msgs, inject, deliver, delivered = con.execute(
        "select total_messages, time_to_inject_s, time_to_deliver_s, delivered from runs "
        "where run_id = 'e-smtp-source-s5'"
    ).fetchone()
    assert msgs == 20_000 == delivered
    assert inject == pytest.approx(expected_inject, abs=1e-3) and 18.5 < inject < 19.5  # a 19-second load
    assert deliver >= inject - 1  # the last delivery is logged with one-second resolution


def test_messages_carry_delays_from_the_delivery_line(con):
    row = con.execute(
        "select delay, delay_before_qmgr, delay_in_qmgr, delay_conn_setup, delay_transmission, "
        "relay, dsn from messages where run_id = 'a-baseline-t5' and queue_id = 'EFA2ABA0BC'"
    ).fetchone()
    # Nov 21 22:05:12 ... EFA2ABA0BC: to=<user431@bench.test>, relay=virtual, delay=0.07,
    #   delays=0.06/0.01/0/0, dsn=2.0.0, status=sent (delivered to maildir)
    assert row == (0.07, 0.06, 0.01, 0, 0, "virtual", "2.0.0")
