"""A run's date comes from its own content, never from file modification times (a copy moves
them by days): a run without run.toml, its files copied with new mtimes, loads and publishes."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
import time
from datetime import date

import duckdb
from conftest import SAMPLES

from ingest import run_clock

MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]
BASE = SAMPLES / "runs/a-baseline-t5"


def test_stamps_with_a_year_date_a_run():
    assert run_clock.first_date(" 8  0  0 20883412 0 2026-11-21 22:05:06\n") == date(2026, 11, 21)
    assert run_clock.first_date("Linux 6.1 (vm) \t11/21/26 \t_x86_64_\t(2 CPU)\n") == date(2026, 11, 21)
    assert run_clock.first_date("2026-02-30T10:00:00Z x\n2026-03-01T10:00:00+08:00 y\n") == date(2026, 3, 1)
    assert run_clock.first_date("Nov 21 22:05:11 vm postfix/smtpd[1]: connect\n22:06,4954\n") is None
    assert run_clock.month_day("Nov 21 22:05:11 vm postfix/smtpd[1]: connect\n") == (11, 21)
    assert run_clock.latest_past_year(11, 21, date(2027, 3, 1)) == date(2026, 11, 21)
    assert run_clock.latest_past_year(2, 29, date(2027, 3, 1)) == date(2024, 2, 29)


def test_a_run_without_manifest_is_dated_by_its_maillog_not_its_mtimes(tmp_path):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "a-baseline-t5")
    copied = archive / "copied"
    copied.mkdir()
    week = time.time() + 6 * 86400  # a copy made days later: mtimes say nothing of the run
    for name in ("maillog.gz", "postal.csv"):
        shutil.copyfile(BASE / name, copied / name)
        os.utime(copied / name, (week, week))
    # postal's clock labels alone carry no day: nothing dates this run
    (archive / "undated").mkdir()
    shutil.copyfile(BASE / "postal.csv", archive / "undated/postal.csv")
    # the oracle: the maillog's first stamp, read here
    first = gzip.decompress((BASE / "maillog.gz").read_bytes()).split(b"\n", 1)[0].decode()
    month, day = first[:3], int(first[4:6])
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    env["MTABENCH_DATA"] = str(tmp_path / "data")
    proc = subprocess.run(
        [*MTABENCH, "run", str(archive)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with duckdb.connect(str(tmp_path / "data/serving/mtabench.duckdb"), read_only=True) as con:
        got = dict(con.execute("select run_id, status from runs").fetchall())
        reason = con.execute("select status_reason from runs where run_id = 'undated'").fetchone()[0]
    with duckdb.connect(str(tmp_path / "data/mtabench.duckdb"), read_only=True) as con:
        run_date, inferred = con.execute(
            "select run_date, inferred from raw.runs where run_key = 'copied'"
        ).fetchone()
    assert got == {"a-baseline-t5": "ok", "copied": "ok", "undated": "failed"}
    assert reason.startswith("no date: ") and "warning: run undated -> undated: no date: " in proc.stderr
    assert (run_date.strftime("%b"), run_date.day) == (month, day)
    assert "from the stamps of copied/maillog.gz" in inferred and "modification" not in inferred


def test_a_run_whose_manifest_names_only_the_samplers_start_takes_its_day(tmp_path):
    """A vmstat without `-t` and a run.toml that gives `monitor_start_utc` (and the command's
    interval) but no date or start_utc: the samples are timed from it, and so is the run's
    date; the run is not reported undated."""
    run = tmp_path / "archive" / "vm"
    run.mkdir(parents=True)
    shutil.copyfile(SAMPLES.parent / "tests/fixtures/sysstat/vmstat_no_t_60.txt", run / "vmstat.txt")
    (run / "run.toml").write_text(
        'monitor_start_utc = "2026-11-28T10:35:44Z"\n[tool]\nvmstat_command = "vmstat 60 3"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    env["MTABENCH_DATA"] = str(tmp_path / "data")
    proc = subprocess.run([*MTABENCH, "ingest", str(run.parent)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with duckdb.connect(str(tmp_path / "data/mtabench.duckdb"), read_only=True) as con:
        run_date, inferred = con.execute("select run_date, inferred from raw.runs").fetchone()
        first = con.execute("select min(sampled_at) from raw.vmstat_samples").fetchone()[0]
    assert run_date == date(2026, 11, 28) and first.date() == run_date
    assert "no date" not in (inferred or "") and "no date" not in proc.stderr
