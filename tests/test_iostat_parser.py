from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from conftest import found

from ingest.landing import PROVENANCE, write_ledger
from ingest.parsers.base import ParseContext
from ingest.parsers.iostat import IostatParser

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "sysstat"
RUNS = found((ROOT / "samples" / "runs").glob("*/iostat.txt"), "iostat samples")
MISC_X = ROOT / "tests" / "fixtures" / "misc" / "iostat_x.txt"
# independent rules: a device row starts with a name and has only numbers after it;
# a cpu row has only numbers
DEV_LINE = re.compile(r"^[A-Za-z][\w.-]*(?:\s+-?\d+[.,]\d+)+\s*$")
CPU_LINE = re.compile(r"^(?:\s+-?\d+[.,]\d+){5,6}\s*$")

P = IostatParser()


def _lines(path: Path) -> list[tuple[int, str]]:
    return list(enumerate(path.read_text().split("\n")[:-1], start=1))


def _parse(path: Path, ctx: ParseContext | None = None):
    lines = _lines(path)
    ledger = P.parse(lines, ctx or ParseContext())
    return ledger, ledger.counts(len(lines)), ledger.rows["iostat_cpu"], ledger.rows["iostat_devices"]


@pytest.mark.parametrize("path", RUNS, ids=lambda p: p.parent.name)
def test_real_runs(path):
    ctx = ParseContext(start_utc=datetime(2026, 11, 21, 22, 0), commands={"iostat_command": "iostat -x 5"})
    ledger, counts, cpu, dev = _parse(path, ctx)
    lines = _lines(path)
    assert [r["line_no"] for r in dev] == [n for n, t in lines if DEV_LINE.match(t)]
    assert [r["line_no"] for r in cpu] == [n for n, t in lines if CPU_LINE.match(t)]
    assert counts.quarantined == 0
    assert len(cpu) == len(dev)  # one disk (vda), one report each
    assert [r["is_since_boot"] for r in cpu] == [True] + [False] * (len(cpu) - 1)
    assert [r["report_index"] for r in cpu] == list(range(len(cpu)))
    assert all(r["device"] == "vda" and r["layout"] == "sysstat12" for r in dev)
    for c in cpu:
        total = c["user"] + c["nice"] + c["system"] + c["iowait"] + c["steal"] + c["idle"]
        assert abs(total - 100) < 0.2
    assert all(r["sampled_at"] is not None for r in cpu)


def test_t_stamps_from_real_run():
    path = ROOT / "samples" / "runs" / "d-errors-rcpt-rejects" / "iostat.txt"
    _, _, cpu, dev = _parse(path)
    assert cpu[0]["stamp_text"] == "11/21/26 22:21:49"
    assert cpu[0]["sampled_at"] == datetime(2026, 11, 21, 22, 21, 49)
    assert dev[1]["sampled_at"] == datetime(2026, 11, 21, 22, 21, 54)
    assert dev[1]["r_s"] == 102.80 and dev[1]["util"] == 0.96 and dev[1]["aqu_sz"] == 0.05
    extra = json.loads(dev[1]["extra_json"])
    assert extra["f/s"] == 4.40 and extra["%wrqm"] == 36.56


def test_no_t_times_from_start_and_interval():
    path = ROOT / "samples" / "runs" / "a-baseline-t5" / "iostat.txt"
    ctx = ParseContext(start_utc=datetime(2026, 11, 21, 22, 5, 6), commands={"iostat_command": "iostat -x 5"})
    _, _, cpu, _ = _parse(path, ctx)
    assert cpu[0]["sampled_at"] == datetime(2026, 11, 21, 22, 5, 6)
    assert cpu[3]["sampled_at"] == datetime(2026, 11, 21, 22, 5, 21)
    _, _, cpu, _ = _parse(path, ParseContext(start_utc=datetime(2026, 11, 21)))
    assert all(r["sampled_at"] is None for r in cpu)
    ctx = ParseContext(start_utc=datetime(2026, 11, 21), commands={"iostat_command": "iostat -x -y 5"})
    _, _, cpu, _ = _parse(path, ctx)
    assert not any(r["is_since_boot"] for r in cpu)


def test_misc_three_invocations_and_json():
    ledger, counts, cpu, dev = _parse(MISC_X)
    assert counts.quarantined == 0
    assert len(cpu) == 4 and len(dev) == 4
    assert [r["segment"] for r in cpu] == [1, 1, 2, 3]
    assert [r["is_since_boot"] for r in cpu] == [True, False, True, True]
    assert cpu[2]["sampled_at"] == datetime(2026, 11, 21, 22, 10, 25)  # ISO +0000
    j = dev[3]
    assert j["layout"] == "json" and j["device"] == "vda" and j["w_s"] == 445.44 and j["util"] == 4.64
    assert json.loads(j["extra_json"])["%wrqm"] == 22.58
    assert cpu[3]["idle"] == 31.21
    text_lines = [n for n, t in _lines(MISC_X) if DEV_LINE.match(t)]
    assert [r["line_no"] for r in dev[:3]] == text_lines


def test_sysstat10_ampm_several_devices():
    ctx = ParseContext(utc_offset_minutes=-240)  # EDT
    _, counts, cpu, dev = _parse(FIX / "iostat_sysstat10_t_ampm.txt", ctx)
    assert counts.quarantined == 0 and len(cpu) == 2 and len(dev) == 6
    assert [r["device"] for r in dev[:3]] == ["sda", "sdb", "dm-0"]
    assert cpu[0]["sampled_at"] == datetime(2018, 5, 31, 15, 59, 55)
    assert cpu[1]["sampled_at"] == datetime(2018, 5, 31, 16, 0, 5)  # 12:00:05 PM is noon
    d = dev[3]
    assert d["layout"] == "sysstat9-11"
    assert (d["wrqm_s"], d["w_s"], d["wkb_s"], d["aqu_sz"], d["await"], d["svctm"], d["util"]) == (
        412.30, 188.40, 2403.20, 1.92, 10.08, 0.98, 18.67,
    )  # fmt: skip
    assert json.loads(d["extra_json"]) == {"avgrq-sz": 25.41}
    assert [r["is_since_boot"] for r in dev] == [True] * 3 + [False] * 3


def test_iso_stamps():
    _, counts, cpu, dev = _parse(FIX / "iostat_iso.txt", ParseContext(utc_offset_minutes=120))
    assert counts.quarantined == 0 and len(dev) == 4
    assert cpu[1]["sampled_at"] == datetime(2026, 11, 21, 22, 6, 51)  # offset in the stamp wins


def test_decimal_comma():
    _, counts, cpu, dev = _parse(FIX / "iostat_decimal_comma.txt", ParseContext(utc_offset_minutes=60))
    assert counts.quarantined == 0 and len(cpu) == 2 and len(dev) == 2
    assert cpu[0]["user"] == 48.86 and cpu[1]["idle"] == 99.20
    assert dev[0]["wkb_s"] == 14038.55 and dev[0]["util"] == 5.03
    assert cpu[0]["sampled_at"] == datetime(2026, 11, 21, 22, 26, 9)


def test_unknown_sysstat_version_quarantined():
    ledger, counts, cpu, dev = _parse(FIX / "iostat_unknown_version.txt")
    assert len(cpu) == 1 and dev == []
    assert counts.quarantined == 3
    assert all("unknown columns" in q["reason"] and "rqm/s" in q["reason"] for q in ledger.quarantine)


def test_sniff():
    assert P.sniff(MISC_X.read_text(), "iostat_x.txt") >= 90
    assert P.sniff((FIX / "iostat_sysstat10_t_ampm.txt").read_text(), "x") >= 90
    assert P.sniff((ROOT / "tests" / "fixtures" / "misc" / "vmstat_t_w.txt").read_text(), "x") == 0


def test_lands_in_duckdb():
    ledger, _, cpu, dev = _parse(MISC_X)
    con = duckdb.connect()
    con.execute("create schema raw")
    for t, cols in {**P.tables, "noise": "kind VARCHAR, text VARCHAR",
                    "quarantine": "reason VARCHAR, text VARCHAR"}.items():  # fmt: skip
        con.execute(f"create table raw.{t} ({PROVENANCE}, {cols})")
    write_ledger(con, 3, ledger, P.tables)
    # %user from the file by another route: the row under each text avg-cpu header, and the JSON value
    text = MISC_X.read_text().splitlines()
    users = [float(text[i + 1].split()[0]) for i, ln in enumerate(text) if ln.startswith("avg-cpu:")]
    users += [float(v) for v in re.findall(r'"user":\s*([\d.]+)', MISC_X.read_text())]
    n, total = con.execute('select count(*), sum("user") from raw.iostat_cpu').fetchone()
    assert n == len(users) == 4 and total == pytest.approx(sum(users), abs=1e-9)
    assert con.execute("select count(distinct device) from raw.iostat_devices").fetchone() == (1,)


def test_y_without_its_command_is_told_by_the_blank_line_it_leaves():
    """sysstat 12.6's `iostat -x -y -t 1 3` and `iostat -x -t 1 5`, captured side by side under
    one load: with -y (and no manifest naming it) the banner is followed by two blank lines and
    no report is the average since boot; without it the first report is."""
    _, counts, cpu, dev = _parse(FIX / "iostat_x_y_t.txt")
    assert counts.quarantined == 0 and len(cpu) == 3 and dev
    assert not any(r["is_since_boot"] for r in cpu + dev)
    _, _, cpu, dev = _parse(FIX / "iostat_x_t_1261.txt")
    first = {r["report_index"] for r in cpu + dev if r["is_since_boot"]}
    assert first == {0} and [r["is_since_boot"] for r in cpu] == [True] + [False] * (len(cpu) - 1)
