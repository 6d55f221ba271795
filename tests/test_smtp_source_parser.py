"""SmtpSourceParser on the recorded smtp-source run."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from conftest import land_file

from ingest.parsers.smtp_source import SmtpSourceParser

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "samples" / "runs" / "e-smtp-source-s5" / "smtp-source.out"


@pytest.fixture
def con(landing_con):
    return landing_con


def land(con, path: Path):
    return land_file(con, SmtpSourceParser(), path, file_id=7)


def test_sample_run(con):
    counts = land(con, SAMPLE)
    assert (counts.total, counts.parsed, counts.noise, counts.quarantined) == (4, 4, 0, 0)
    run = con.execute(
        "select run_seq, start_at, end_at, duration_s, messages, exit_code from raw.smtp_source_runs"
    ).fetchall()
    assert len(run) == 1
    seq, start, end, dur, messages, code = run[0]
    assert (seq, messages, code) == (1, 20000, 0)
    assert start == datetime(2026, 11, 21, 22, 26, 15, 2724)
    assert end == datetime(2026, 11, 21, 22, 26, 34, 33752)
    assert dur == pytest.approx(19.03, abs=0.005)
    kinds = con.execute(
        "select line_no, kind, value, n_values from raw.smtp_source_lines order by 1"
    ).fetchall()
    assert kinds == [
        (1, "start", None, None),
        (2, "counter", 20000, 20000),
        (3, "exit", 0, None),
        (4, "end", None, None),
    ]


def test_sink_wrapper_and_garbage(con, tmp_path):
    p = tmp_path / "smtp-sink.out"
    p.write_bytes(
        b"start 2026-11-21T22:00:00Z\n"
        b"+ smtp-sink -c 127.0.0.1:2528 1000\n"
        b"sess=1 quit=0 mesg=0\rsess=2 quit=1 mesg=1\rsess=5 quit=4 mesg=12\r\n"
        b"\n"
        b"what is this\n"
        b"smtp-sink exit=143\n"
        b"end 2026-11-21T22:01:00.5+01:00\n"
    )
    counts = land(con, p)
    assert (counts.total, counts.parsed, counts.noise, counts.quarantined) == (7, 4, 2, 1)
    row = con.execute(
        "select sink_sessions, sink_quits, sink_messages, exit_code, duration_s from raw.smtp_source_runs"
    ).fetchone()
    assert row == (5, 4, 12, 143, pytest.approx(60.5 - 3600))
    assert con.execute("select line_no from raw.quarantine").fetchall() == [(5,)]


def test_sniff():
    head = SAMPLE.read_bytes()[:4096].decode()
    assert SmtpSourceParser().sniff(head, "smtp-source.out") >= 90
    assert SmtpSourceParser().sniff("Nov 21 22:04:34 mx1 postfix/smtpd[1]: connect\n", "maillog") == 0
