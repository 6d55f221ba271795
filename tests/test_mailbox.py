"""The mailbox side: POP3/IMAP server logs (Dovecot recorded, Courier written from its documented
formats) and rabid's output, in minutes / runs / daily_capacity / events.

Expected figures come from the raw files by their own route (regexes and the csv module here,
not our parser): per-minute POP3 sessions, retrieved messages and bytes, zero-byte sessions.
"""

from __future__ import annotations

import csv
import gzip
import re
import shutil
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES, SAMPLES, found

from mtabench.cli.main import main

DOVECOT_RUNS = [p.parent.name for p in found(SAMPLES.glob("runs/*/dovecot.log.gz"), "Dovecot logs")]
RABID_RUNS = [p.parent.name for p in found(SAMPLES.glob("runs/*/rabid.csv"), "rabid outputs")]

# a logged-in Dovecot session's end line carries the logout counters (pop3_logout_format,
# imap_logout_format); the minute is the RFC 3339 stamp's, read in UTC
DOVECOT_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d):\d\d(?:\.\d+)?\+00:00 ")
POP_END = re.compile(r" dovecot: pop3\([^)]+\)<[^>]*><[^>]*>: .*\bretr=(\d+)/(\d+), del=(\d+)/")
IMAP_END = re.compile(r" dovecot: imap\([^)]+\)<[^>]*><[^>]*>: .*\bbody_count=(\d+) body_bytes=(\d+)")


def dovecot_minutes(path: Path) -> dict[datetime, dict[str, int]]:
    per: dict[datetime, Counter] = defaultdict(Counter)
    for line in gzip.decompress(path.read_bytes()).decode().splitlines():
        stamp = DOVECOT_STAMP.match(line)
        if not stamp:
            continue
        minute = datetime.fromisoformat(stamp.group(1)).replace(tzinfo=None)
        if m := POP_END.search(line):
            c = per[minute]
            c["pop3_sessions"] += 1
            c["msgs_retrieved"] += int(m.group(1))
            c["bytes_retrieved"] += int(m.group(2))
            c["msgs_deleted"] += int(m.group(3))
            c["zero_byte_sessions"] += m.group(2) == "0"
        elif m := IMAP_END.search(line):
            c = per[minute]
            c["imap_sessions"] += 1
            c["msgs_retrieved"] += int(m.group(1))
            c["bytes_retrieved"] += int(m.group(2))
            c["zero_byte_sessions"] += m.group(2) == "0"
        if " dovecot: " in line and ("auth failed" in line or "Aborted login" in line):
            per[minute]["mailbox_login_failures"] += 1
    return per


COLS = (
    "pop3_sessions",
    "imap_sessions",
    "msgs_retrieved",
    "msgs_deleted",
    "bytes_retrieved",
    "zero_byte_sessions",
    "mailbox_login_failures",
)


def mart_minutes(con, run_id: str) -> dict[datetime, dict[str, int]]:
    rows = con.execute(
        f"select minute_at, {', '.join(COLS)} from minutes where run_id = ? and mailbox_sessions is not null",
        [run_id],
    ).fetchall()
    return {r[0]: {c: v for c, v in zip(COLS, r[1:], strict=True) if v} for r in rows}


@pytest.mark.parametrize("run_id", DOVECOT_RUNS)
def test_per_minute_pop_figures_equal_a_count_over_the_raw_dovecot_log(con, run_id):
    want = dovecot_minutes(SAMPLES / "runs" / run_id / "dovecot.log.gz")
    active = {m: c for m, c in want.items() if c["pop3_sessions"] + c["imap_sessions"]}
    want = {m: {k: v for k, v in c.items() if v} for m, c in active.items()}
    assert sum(c.get("pop3_sessions", 0) for c in want.values()) > 50  # a real drain, not an empty log
    assert mart_minutes(con, run_id) == want
    totals = con.execute(
        "select pop3_sessions, msgs_retrieved, bytes_retrieved, zero_byte_sessions, tool, status from runs "
        "where run_id = ?",
        [run_id],
    ).fetchone()
    assert totals[:4] == tuple(
        sum(c.get(k, 0) for c in want.values())
        for k in ("pop3_sessions", "msgs_retrieved", "bytes_retrieved", "zero_byte_sessions")
    )
    assert totals[5] == "ok"


@pytest.mark.parametrize("run_id", DOVECOT_RUNS)
def test_retrievals_per_minute_and_per_day(con, run_id):
    """sustained = median of the minutes wholly inside the load window, counted here from the log."""
    start, end = con.execute("select started_at, ended_at from runs where run_id = ?", [run_id]).fetchone()
    per = dovecot_minutes(SAMPLES / "runs" / run_id / "dovecot.log.gz")
    full = sorted(
        c["msgs_retrieved"]
        for m, c in per.items()
        if c["pop3_sessions"] + c["imap_sessions"] and m >= start and (m.timestamp() + 60) <= end.timestamp()
    )
    assert len(full) >= 1
    n = len(full)
    median = full[n // 2] if n % 2 else (full[n // 2 - 1] + full[n // 2]) / 2
    got = con.execute(
        "select mailbox_full_minutes, sustained_retrievals_per_min, sustained_retrievals_per_day, "
        "peak_retrievals_per_day from daily_capacity where run_id = ?",
        [run_id],
    ).fetchone()
    assert got == (n, median, median * 1440, max(full) * 1440)


ROW_LABEL = re.compile(r"\d{1,2}:\d\d")


@pytest.mark.parametrize("run_id", RABID_RUNS)
def test_rabid_totals_equal_the_sum_of_its_rows(con, run_id):
    """rabid's rows are the mailbox side's: they never count as postal's SMTP messages."""
    text = (SAMPLES / "runs" / run_id / "rabid.csv").read_text()
    rows = [r for r in csv.reader(text.splitlines()) if r and ROW_LABEL.fullmatch(r[0])]
    got = con.execute(
        "select rabid_messages, rabid_data_kb, rabid_errors, rabid_connections from runs where run_id = ?",
        [run_id],
    ).fetchone()
    if rows:
        assert got == tuple(sum(int(r[i]) for r in rows) for i in (1, 2, 3, 4))
    else:  # rabid 0.75 printed no per-minute row (docs/mailbox.md)
        assert got == (None, None, None, None)
    postal = SAMPLES / "runs" / run_id / "postal.csv"
    if postal.exists():
        smtp = [r for r in csv.reader(postal.read_text().splitlines()) if r and ROW_LABEL.fullmatch(r[0])]
        total = con.execute("select total_messages from runs where run_id = ?", [run_id]).fetchone()[0]
        assert total == sum(int(r[1]) for r in smtp)
    # rabid's error lines are events of their own source, never postal's
    rabid_events = con.execute(
        "select count(*) from events e join raw.files f using (file_id) "
        "where e.run_id = ? and f.path like '%rabid%'",
        [run_id],
    ).fetchone()[0]
    tagged = con.execute("select count(*) from events where run_id = ? and source = 'rabid'", [run_id])
    assert rabid_events == tagged.fetchone()[0]


COURIER = FIXTURES / "mailbox" / "courier-pop-imap"
COURIER_STAMP = re.compile(r"^Nov 24 (\d\d):(\d\d):\d\d ")
COURIER_END = re.compile(r" (pop3d|imapd): (?:LOGOUT|DISCONNECTED), .*?(?:retr|body)=(\d+),")


def test_courier_lines_make_a_mailbox_only_run(tmp_path):
    """Courier's lines (written from its documented formats) in a run with only the mailbox side."""
    run = tmp_path / "archive" / "courier-pop-imap"
    shutil.copytree(COURIER, run)
    db = tmp_path / "t.duckdb"
    assert main(["ingest", str(tmp_path / "archive"), "--db", str(db)]) == 0
    assert main(["build", "--db", str(db)]) == 0
    text = (COURIER / "maillog").read_text()
    want: dict[datetime, Counter] = defaultdict(Counter)
    failures = disconnects = 0
    for line in text.splitlines():
        hh, mm = COURIER_STAMP.match(line).groups()
        minute = datetime(2026, 11, 24, int(hh), int(mm))
        if m := COURIER_END.search(line):
            want[minute][f"{'pop3' if m.group(1) == 'pop3d' else 'imap'}_sessions"] += 1
            want[minute]["bytes_retrieved"] += int(m.group(2))
            want[minute]["zero_byte_sessions"] += m.group(2) == "0"
        failures += "LOGIN FAILED" in line
        disconnects += ": DISCONNECTED," in line
    with duckdb.connect(str(db), read_only=True) as con:
        lines = con.execute(
            "select lines_total, lines_parsed, lines_noise, lines_quarantined from raw.files "
            "where format = 'maillog'"
        ).fetchall()
        assert lines == [(len(text.splitlines()), len(text.splitlines()), 0, 0)]
        got = con.execute(
            "select minute_at, pop3_sessions, imap_sessions, bytes_retrieved, zero_byte_sessions, "
            "msgs_retrieved from minutes where run_id = 'courier-pop-imap' order by minute_at"
        ).fetchall()
        names = ("pop3_sessions", "imap_sessions", "bytes_retrieved", "zero_byte_sessions")
        got_minutes = {r[0]: {k: v for k, v in zip(names, r[1:5], strict=True) if v} for r in got}
        assert got_minutes == {m: {k: v for k, v in c.items() if v} for m, c in want.items()}
        assert all(r[5] is None for r in got)  # Courier logs bytes, not message counts
        run = con.execute(
            "select status, tool, mailbox_login_failures, mailbox_sessions from runs "
            "where run_id = 'courier-pop-imap'"
        ).fetchone()
        sessions = sum(c["pop3_sessions"] + c["imap_sessions"] for c in want.values())
        assert run == ("ok", "rabid", failures, sessions)
        events = dict(
            con.execute(
                "select kind, count(*) from events where run_id = 'courier-pop-imap' group by kind"
            ).fetchall()
        )
        assert events == {"mailbox_auth_failed": failures, "mailbox_disconnect": disconnects}
        assert failures > 0 and disconnects > 0
