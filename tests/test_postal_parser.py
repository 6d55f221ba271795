"""The postal/bhm parser on real outputs (recorded runs, seed 000 cuts, misc captures)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES, SAMPLES, found

from ingest.parsers.base import ParseContext
from ingest.parsers.postal import PostalParser
from ingest.source import FileSource


def parse(path: Path):
    src = FileSource(path, path.name)
    lines = list(src.lines())
    ledger = PostalParser().parse(lines, ParseContext())
    return ledger, ledger.counts(len(lines))


def parse_text(tmp_path: Path, text: str | bytes):
    p = tmp_path / "postal.out"
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return parse(p)


def test_d_errors_one_event_per_server_error_line():
    path = SAMPLES / "runs/d-errors-rcpt-rejects/postal.csv"
    ledger, counts = parse(path)
    # independent count: every line starting "Server error:", code = the 3 characters after it
    plain = Counter(
        line[len("Server error:") :][:3]
        for line in path.read_text().splitlines()
        if line.startswith("Server error:")
    )
    events = [e for e in ledger.rows["postal_events"] if e["kind"] == "server_error"]
    assert Counter(str(e["smtp_code"]) for e in events) == plain
    assert len(ledger.rows["postal_rows"]) == 4
    assert sum(1 for line in path.read_text().splitlines() if line == ".") == counts.noise - 1  # + header


def test_d0_failed_run_keeps_its_events():
    ledger, counts = parse(SAMPLES / "runs/d0-postal-segfault-connlimit/postal.csv")
    assert ledger.rows["postal_rows"] == []
    kinds = Counter(e["kind"] for e in ledger.rows["postal_events"])
    assert kinds["socket_write_failed"] == 223  # the sample README: 223 "Can't write to socket." lines
    assert counts.quarantined == 0


def test_seed000_hour_long_run_crosses_midnight():
    ledger, _ = parse(SAMPLES / "seed000/s8-active-limit-50000/postal.out")
    rows = ledger.rows["postal_rows"]
    # seed 000 prints rows 23:52 -> 01:04; 73 rows summing to 197,465 messages
    # (checked with: grep -oE '[0-9]{2}:[0-9]{2},[0-9,]+' | awk -F, '{m+=$2} END {print NR, m}')
    assert len(rows) == 73
    assert sum(r["messages"] for r in rows) == 197_465
    assert rows[0]["clock_label"] == "23:52" and rows[-1]["clock_label"] == "01:04"
    assert [r["minute_index"] for r in rows] == list(range(73))
    assert {r["segment"] for r in rows} == {1}


def test_header_variant_and_label(tmp_path):
    ledger, counts = parse(SAMPLES / "seed000/s4-ldap-2000-addresses/postal.out")
    assert len(ledger.rows["postal_rows"]) == 8
    assert {n["kind"] for n in ledger.noise} == {"label", "header"}
    assert ledger.meta["postal_segments"][0]["header"] == "time,msg/m,KB,error,connection,SSL"


def test_back_to_back_runs_split_on_clock_jump():
    ledger, _ = parse(SAMPLES / "seed000/s7-ldap-cache/postal.out")
    segs = ledger.meta["postal_segments"]
    assert [s["started_by"] for s in segs] == ["file_start", "clock_jump"]
    assert [s["n_rows"] for s in segs] == [4, 16]  # 23:03-23:06, then 23:33-23:48


def test_prompts_split_runs_and_script_lines_are_noise():
    ledger, counts = parse(SAMPLES / "seed000/s9-proxymap/postal.out")
    assert [s["n_rows"] for s in ledger.meta["postal_segments"]] == [4, 8, 4, 2, 22]
    assert counts.quarantined == 0
    assert "script" in {n["kind"] for n in ledger.noise}


def test_bhm_repeated_final_label_is_a_partial_next_minute():
    ledger, _ = parse(FIXTURES / "misc/bhm.out")
    rows = ledger.rows["postal_rows"]
    assert [r["clock_label"] for r in rows[-2:]] == ["22:09", "22:09"]
    assert rows[-1]["is_repeat_label"] and rows[-1]["minute_index"] == rows[-2]["minute_index"] + 1


def test_separate_stderr_file_is_all_events():
    path = FIXTURES / "misc/postal_pfx_run2.err"
    ledger, counts = parse(path)
    n_errors = sum(1 for line in path.read_text().splitlines() if line.startswith("Server error:"))
    assert len(ledger.rows["postal_events"]) == n_errors
    assert counts.parsed == n_errors and counts.noise == n_errors  # each reply has its lone "."


def test_broken_row_in_the_middle_is_quarantined_with_its_line(tmp_path):
    text = (
        "time,messages,data(K),errors,connections,SSL connections\n"
        "22:06,4954,11961,0,4959,0\n"
        "22:07,49x2,11804,0,4902,0\n"
        "22:08,3767,9184\n"
        "22:09,3087,7488,2,3087,0\n"
    )
    ledger, counts = parse_text(tmp_path, text)
    assert (counts.total, counts.parsed, counts.noise, counts.quarantined) == (5, 2, 1, 2)
    assert [q["line_no"] for q in ledger.quarantine] == [3, 4]
    assert "malformed" in ledger.quarantine[0]["reason"]
    assert "2 counters, expected 5" in ledger.quarantine[1]["reason"]


def test_crlf_and_non_utf8_bytes(tmp_path):
    text = (
        b"time,messages,data(K),errors,connections,SSL connections\r\n"
        b"12:04,1515,602,81,808,0\r\n" + "^^ 81个错误\r\n".encode("gb18030") + b"12:05,1969,787,11,1012,0\r\n"
    )
    ledger, counts = parse_text(tmp_path, text)
    assert len(ledger.rows["postal_rows"]) == 2
    assert counts.quarantined == 0
    assert any(n["kind"] == "annotation" and "81" in n["text"] for n in ledger.noise)


def test_error_before_row_belongs_to_that_minute(tmp_path):
    text = (
        "time,messages,data(K),errors,connections,SSL connections\n"
        "12:03,2284,912,0,1112,0\n"
        "Server error:451 4.3.0 <u@x>: Temporary lookup failure\r\n.\n"
        "12:04,1515,602,1,808,0\n"
        "Server timed out on read.\n"
    )
    ledger, _ = parse_text(tmp_path, text)
    ev = ledger.rows["postal_events"]
    assert (ev[0]["smtp_code"], ev[0]["enhanced_code"], ev[0]["next_row_seq"]) == (451, "4.3.0", 2)
    assert ev[1]["kind"] == "read_timeout" and ev[1]["next_row_seq"] is None  # after the last row


@pytest.mark.parametrize(
    "path", found(SAMPLES.glob("seed000/*/postal.out"), "postal.out"), ids=lambda p: p.parent.name
)
def test_seed_cuts_have_no_unexplained_text(path):
    ledger, counts = parse(path)
    assert counts.quarantined == 0, ledger.quarantine
    rows_in_text = len(re.findall(r"\b\d{2}:\d{2},\d+,\d+,\d+,\d+,\d+\b", path.read_text()))
    assert len(ledger.rows["postal_rows"]) == rows_in_text
