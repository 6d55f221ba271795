from __future__ import annotations

import json
from pathlib import Path

import duckdb

from ingest.landing import PROVENANCE, write_ledger
from ingest.parsers.base import ParseContext
from ingest.parsers.dtrace import DtraceParser, SampleSeriesParser
from mtabench.stats.ministat import Stats

FIX = Path(__file__).resolve().parent / "fixtures" / "sysstat"
P = DtraceParser()
S = SampleSeriesParser()


def _lines(path: Path) -> list[tuple[int, str]]:
    return list(enumerate(path.read_text().split("\n")[:-1], start=1))


def _parse(name: str, parser=P):
    lines = _lines(FIX / name)
    ledger = parser.parse(lines, ParseContext())
    return ledger, ledger.counts(len(lines))


def _hist(ledger):
    return [
        (r["bucket_label"], r["bucket_low"], r["bucket_high"], r["count"])
        for r in ledger.rows["dtrace_histograms"]
    ]


def test_quantize_with_keys_and_printf():
    ledger, counts = _parse("dtrace_quantize.txt")
    assert counts.quarantined == 0
    assert ledger.noise[0]["kind"] == "banner"
    printf = [r["text"] for r in ledger.rows["dtrace_lines"]]
    assert printf == ["queue-run start 1", "queue-read 454258", "queue-sort 6754"]
    rows = ledger.rows["dtrace_histograms"]
    assert {r["key_text"] for r in rows} == {"queue-read", "queue-sort"}
    assert {r["kind"] for r in rows} == {"quantize"}
    assert [r["block_index"] for r in rows] == [1, 1, 1, 2, 2, 2, 2]
    assert _hist(ledger)[:3] == [
        ("131072", 131072, 262144, 0),
        ("262144", 262144, 524288, 10),
        ("524288", 524288, 1048576, 0),
    ]
    assert sum(r["count"] for r in rows if r["key_text"] == "queue-sort") == 10
    assert [n["kind"] for n in ledger.noise].count("histogram_key") == 2


def test_lquantize_open_ends():
    ledger, counts = _parse("dtrace_lquantize.txt")
    assert counts.quarantined == 0
    assert _hist(ledger) == [
        ("< 0", None, 0, 0),
        ("0", 0, 10, 50),
        ("10", 10, 20, 25),
        ("20", 20, 30, 25),
        ("30", 30, 40, 0),
        (">= 100", 100, None, 2),
    ]
    assert {r["kind"] for r in ledger.rows["dtrace_histograms"]} == {"lquantize"}


def test_llquantize():
    ledger, counts = _parse("dtrace_llquantize.txt")
    assert counts.quarantined == 0
    rows = ledger.rows["dtrace_histograms"]
    assert {r["kind"] for r in rows} == {"llquantize"} and rows[0]["key_text"] == "smtpd"
    assert _hist(ledger)[3] == ("3", 3, 10, 12)
    assert _hist(ledger)[-1] == ("20", 20, None, 0)


def test_aggregations():
    ledger, counts = _parse("dtrace_aggregation.txt")
    assert counts.quarantined == 0
    rows = ledger.rows["dtrace_aggregations"]
    assert [(r["key_text"], r["value"]) for r in rows[:3]] == [
        ("cleanup", 12), ("smtpd", 345), ("postfix/smtp", 1024),
    ]  # fmt: skip
    assert [r["block_index"] for r in rows] == [1, 1, 1, 2, 2]
    assert json.loads(rows[3]["keys_json"]) == ["sendmail"] and json.loads(rows[3]["values_json"]) == [
        1234,
        17,
    ]
    assert rows[3]["value"] == 17
    assert "interrupt" in [n["kind"] for n in ledger.noise]


def test_probe_lines():
    ledger, counts = _parse("dtrace_probes.txt")
    rows = ledger.rows["dtrace_lines"]
    assert counts.quarantined == 0 and len(rows) == 2
    assert (
        rows[0]["cpu"] == 0
        and rows[0]["probe_id"] == 13435
        and rows[0]["probe"] == "exec_common:exec-success"
    )
    assert rows[0]["text"] == "sendmail -q" and rows[0]["kind"] == "probe"


def test_bpftrace():
    ledger, counts = _parse("bpftrace_maps.txt")
    assert counts.quarantined == 0
    aggs = ledger.rows["dtrace_aggregations"]
    assert [(a["agg_name"], a["key_text"], a["value"]) for a in aggs[:4]] == [
        ("bytes", "smtpd", 12840), ("bytes", "cleanup", 4096),
        ("calls", "smtpd, 1234", 17), ("total", None, 16936),
    ]  # fmt: skip
    assert json.loads(aggs[2]["keys_json"]) == ["smtpd", 1234]
    assert json.loads(aggs[4]["values_json"]) == {"count": 12, "average": 3041, "total": 36492}
    hist = [r for r in ledger.rows["dtrace_histograms"] if r["agg_name"] == "usecs"]
    assert [(r["bucket_low"], r["bucket_high"], r["count"]) for r in hist] == [
        (0, 1, 3), (1, 2, 5), (2, 4, 10), (4, 8, 52), (8, 16, 0),
        (512 * 1024, 1024**2, 2), (1024**2, 2 * 1024**2, 1),
    ]  # fmt: skip
    lin = [r for r in ledger.rows["dtrace_histograms"] if r["agg_name"] == "lin"]
    assert lin[0]["key_text"] == "sendmail"
    assert [(r["bucket_low"], r["bucket_high"]) for r in lin] == [
        (None, 0),
        (0, 100),
        (100, 200),
        (1000, None),
    ]
    assert lin[0]["bucket_label"] == "(..., 0)"


def test_histogram_rows_without_header_quarantined():
    ledger, counts = _parse("dtrace_headless_hist.txt")
    assert counts.quarantined == 3
    assert all("without a histogram header" in q["reason"] for q in ledger.quarantine)


def test_sniff():
    assert P.sniff((FIX / "dtrace_quantize.txt").read_text(), "out.txt") >= 90
    assert P.sniff((FIX / "bpftrace_maps.txt").read_text(), "out.txt") >= 80
    assert P.sniff((FIX / "dtrace_llquantize.txt").read_text(), "out.txt") >= 80
    assert P.sniff("procs ---memory---\n r b\n", "vmstat.txt") == 0
    assert S.sniff((FIX / "queue-read.Priority").read_text(), "queue-read.Priority") >= 70
    assert S.sniff("1\n2\nthree\nfour\n5\n", "x") == 0
    assert S.sniff("1\n2\n", "x") == 0
    assert S.sniff((FIX / "dtrace_quantize.txt").read_text(), "x") == 0


def test_sample_series():
    ledger, counts = _parse("queue-read.Priority", S)
    vals = [r["value"] for r in ledger.rows["sample_values"]]
    assert vals == [454258, 446674, 460635, 454535.5, 1500.0]
    assert counts.noise == 2 and counts.quarantined == 0
    assert Stats.of(vals).n == 5
    ledger, counts = _parse("samples_bad.txt", S)
    assert counts.quarantined == 1 and ledger.quarantine[0]["text"] == "three"


def test_lands_in_duckdb():
    con = duckdb.connect()
    con.execute("create schema raw")
    tables = {**P.tables, **S.tables}
    for t, cols in {
        **tables,
        "noise": "kind VARCHAR, text VARCHAR",
        "quarantine": "reason VARCHAR, text VARCHAR",
    }.items():
        con.execute(f"create table raw.{t} ({PROVENANCE}, {cols})")
    for i, name in enumerate(["bpftrace_maps.txt", "dtrace_quantize.txt", "dtrace_aggregation.txt"]):
        ledger, _ = _parse(name)
        write_ledger(con, i, ledger, P.tables)
    ledger, _ = _parse("queue-read.Priority", S)
    write_ledger(con, 9, ledger, S.tables)
    assert con.execute("select count(*) from raw.dtrace_histograms").fetchone()[0] == 18
    assert con.execute("select sum(value) from raw.sample_values").fetchone()[0] == 1817602.5
