"""Saturation events, generator-bound runs and capacity intervals, checked against the
seed 000 rows read here in Python (never by calling our SQL).

Saturation events are change points (macros/saturation.sql). Here: every event the seed's
author points at is found, the steady runs have none, and each event's levels are medians of
full minutes around its start, recomputed from the raw postal rows. How well the method finds
known steps is measured on generated series (bench/saturation_suite.py; a slice below)."""

from __future__ import annotations

import re
import statistics
from datetime import datetime
from math import comb, sqrt
from pathlib import Path

import pytest
from scipy import stats

from tests.conftest import FIXTURES, SAMPLES

SEED = FIXTURES / "seeds" / "000_4cf40d3f19dd5896.txt"  # a copy of ../shared/seeds/000_*
ROW = re.compile(r"(time,messages)|(\d\d):(\d\d),(\d+),(\d+),(\d+),(\d+),(\d+)")
# the dbt vars of the method (dbt_project.yml): window lengths and the longest ramp
BEFORE_WINDOWS, AFTER_WINDOWS, MAX_RAMP = (5, 10), (3, 5), 3

# The seed's own words and ^^^* marks: (folder, first, last) label. A step spread over a few
# minutes starts at its first lower minute: s9 falls 3753 -> 3498 -> 3337 -> 2671 over
# 14:53-14:55, s11 4545 -> 3853 -> 2708 over 23:20-23:21, s8 3552 -> 2887 -> 2517 over
# 00:09-00:10 (the author: 130,000 messages backed up, 95,000 of 220,000 delivered).
SEED_EVENTS = [
    ("s4-ldap-2000-addresses", "10:32", "10:32"),
    ("s5-50conc-3msgs", "11:23", "11:25"),
    ("s5-50conc-3msgs", "11:31", "11:34"),
    ("s7-ldap-cache", "23:39", "23:40"),
    ("s7-ldap-cache", "23:44", "23:45"),
    ("s8-active-limit-50000", "00:09", "00:10"),
    ("s9-proxymap", "14:53", "14:55"),
    ("s10-virtual-concurrency-10", "21:07", "21:07"),
    ("s10-virtual-concurrency-10", "21:10", "21:12"),
    ("s11-multiplex-peaks", "22:58", "22:58"),
    ("s11-multiplex-peaks", "23:20", "23:21"),
]
# Steady stretches and one-minute dips that are not saturation: a single minute with 81
# errors (s6, 12:04), a single minute with 14 errors (s9 14:13), a slow decline (s6-50).
STEADY = [
    "seed000-s6-dest-concurrency-100",
    "seed000-s6-dest-concurrency-50",
    "seed000-s9-proxymap#2",
    "seed000-s11-elvtune",
    "seed000-s12-disk-rw-8192-4096",
    "seed000-s12-disk-rw-4096-2048",
]


def postal_runs(folder: Path) -> list[list[tuple[str, int]]]:
    """(label, messages) rows of each run in a postal output: a new run at a header that
    follows rows, or at a clock jump of more than 5 minutes."""
    runs: list[list[tuple[str, int]]] = []
    current: list[tuple[str, int]] = []
    last = None
    for m in ROW.finditer((folder / "postal.out").read_text(encoding="utf-8")):
        if m.group(1):
            if current:
                runs.append(current)
            current, last = [], None
            continue
        minute = int(m.group(2)) * 60 + int(m.group(3))
        if last is not None and (minute - last) % 1440 > 5 and current:
            runs.append(current)
            current = []
        current.append((f"{m.group(2)}:{m.group(3)}", int(m.group(4))))
        last = minute
    if current:
        runs.append(current)
    return runs


def seed_series() -> dict[str, list[tuple[str, int]]]:
    """run_id -> full minutes (the first row of every run is partial)."""
    out = {}
    for folder in sorted((SAMPLES / "seed000").iterdir()):
        runs = postal_runs(folder)
        for k, rows in enumerate(runs, 1):
            run_id = f"seed000-{folder.name}" + (f"#{k}" if len(runs) > 1 else "")
            out[run_id] = rows[1:]
    return out


@pytest.fixture
def mart_events(con):
    return con.execute(
        "select run_id, start_clock_label, level_before, level_after, drop_pct, duration_minutes, recovered "
        "from saturation_events order by run_id, start_minute_at"
    ).fetchall()


def test_seed_events_are_found(mart_events):
    for folder, first, last in SEED_EVENTS:
        hits = [e for e in mart_events if e[0].split("#")[0] == f"seed000-{folder}" and first <= e[1] <= last]
        assert hits, f"no saturation event in {folder} between {first} and {last}"


def test_levels_are_medians_of_the_minutes_around_the_start(mart_events):
    """level_before: the median of a 5- or 10-minute window ending at most MAX_RAMP minutes
    before the start; level_after: of a 3- or 5-minute window (or the run's last minutes)
    starting at most MAX_RAMP minutes after it; recomputed from the postal rows."""
    series = seed_series()
    checked = 0
    for run_id, label, before, after, drop, *_ in mart_events:
        if not run_id.startswith("seed000-"):
            continue
        rates = [r for _, r in series[run_id]]
        start = [lab for lab, _ in series[run_id]].index(label)
        befores = {
            statistics.median(rates[max(t - w, 0) : t])
            for t in range(max(start - MAX_RAMP, 3), start + 1)
            for w in BEFORE_WINDOWS
        }
        afters = {
            statistics.median(rates[a0 : a0 + w])
            for a0 in range(start, start + MAX_RAMP + 1)
            for w in AFTER_WINDOWS
            if len(rates[a0 : a0 + w]) >= 2
        }
        assert any(before == pytest.approx(b, rel=1e-9) for b in befores), (run_id, label, before)
        assert any(after == pytest.approx(a, rel=1e-9) for a in afters), (run_id, label, after)
        assert drop == pytest.approx(100 * (1 - after / before), rel=1e-9)
        assert drop >= 15
        checked += 1
    assert checked >= len(SEED_EVENTS)
    # the recorded Postfix runs are too short for a window before and three minutes after
    assert not [e for e in mart_events if e[0].split("-")[0] in ("a", "c", "d", "e", "f", "g", "h")]


def test_steady_runs_are_not_flagged(con, mart_events):
    flagged = {e[0] for e in mart_events}
    series = seed_series()
    for run_id in STEADY:
        assert run_id not in flagged
        assert len(series[run_id]) >= 4
    # s6's 12:04 dip: 34 % under the level before, for one minute only
    rates = dict(series["seed000-s6-dest-concurrency-100"])
    assert rates["12:04"] < 0.75 * statistics.median(
        [rates[f"11:{m}"] for m in (59,)] + [rates[f"12:0{m}"] for m in range(4)]
    )
    offset, before = con.execute(
        "select saturation_minute_offset, rate_before_saturation from runs "
        "where run_id = 'seed000-s4-ldap-2000-addresses'"
    ).fetchone()
    rows = postal_runs(SAMPLES / "seed000" / "s4-ldap-2000-addresses")[0]
    assert [label for label, _ in rows].index("10:32") == offset
    assert before == statistics.median([r for label, r in rows[1:] if label < "10:32"][-5:])


def test_generator_cap_from_the_seed_do_sh(con):
    text = SEED.read_text(encoding="utf-8")
    script = text.split("# cat do.sh", 1)[1].splitlines()[1]
    var = re.search(r"-r \$(\w+)", script).group(1)
    cap = int(re.search(rf"{var}=(\d+)", script).group(1))
    assert cap == 5000
    series = seed_series()
    rows = dict(
        (r[0], r[1:])
        for r in con.execute(
            "select r.run_id, r.rate_cap_per_min, r.generator_bound, d.bound_by from runs r "
            "left join daily_capacity d using (run_id) where r.run_id like 'seed000-%'"
        ).fetchall()
    )
    bound = 0
    for run_id, full in series.items():
        folder = SAMPLES / "seed000" / run_id.split("#")[0].removeprefix("seed000-")
        uses_do_sh = "@ns1-bjcnc postal-0.61]# ./do.sh" in (folder / "postal.out").read_text(encoding="utf-8")
        got_cap, got_bound, bound_by = rows[run_id]
        assert got_cap == (cap if uses_do_sh else None), run_id
        at_cap = sum(r >= 0.95 * cap for _, r in full)
        expected = uses_do_sh and bool(full) and 2 * at_cap >= len(full)
        assert got_bound == expected, run_id
        if expected:
            bound += 1
            assert bound_by == "generator"
    # s12 4096/2048 ran 6xxx/min, s11's last run 10 of 12 minutes at the cap
    assert bound >= 2 and rows["seed000-s12-disk-rw-4096-2048"][1]


def median_ci(values: list[float], confidence: float) -> tuple[float, float] | None:
    n, xs = len(values), sorted(values)
    best = None
    for k in range(1, n // 2 + 1):
        tail = sum(comb(n, j) for j in range(k)) / 2**n
        if 1 - 2 * tail >= confidence / 100:
            best = k
    return (xs[best - 1], xs[n - best]) if best else None


def test_capacity_intervals_recomputed(con):
    rows = con.execute(
        "select run_id, confidence, mean_ci_low_msgs_per_min, mean_ci_high_msgs_per_min, "
        "median_ci_low_msgs_per_min, median_ci_high_msgs_per_min, median_ci_low_msgs_per_day, "
        "mean_ci_high_msgs_per_day from daily_capacity where run_id like 'seed000-%'"
    ).fetchall()
    series = seed_series()
    checked_median = 0
    for run_id, conf, t_lo, t_hi, m_lo, m_hi, m_lo_day, t_hi_day in rows:
        values = [float(r) for _, r in series[run_id]]
        if len(values) < 2:
            assert t_lo is None and m_lo is None
            continue
        mean, sd, n = statistics.mean(values), statistics.stdev(values), len(values)
        t = stats.t.ppf(1 - (1 - conf / 100) / 2, n - 1)
        assert t_lo == pytest.approx(mean - t * sd / sqrt(n), rel=2e-3)  # ministat's t has 3 decimals
        assert t_hi == pytest.approx(mean + t * sd / sqrt(n), rel=2e-3)
        assert t_hi_day == pytest.approx(t_hi * 1440)
        ci = median_ci(values, conf)
        if ci is None:
            assert m_lo is None and m_hi is None
        else:
            checked_median += 1
            assert (m_lo, m_hi) == ci and m_lo_day == ci[0] * 1440
            assert m_lo <= statistics.median(values) <= m_hi
    assert checked_median >= 10


def test_short_runs_are_marked_and_left_out(con):
    text = (SAMPLES / "runs/e-smtp-source-s5/smtp-source.out").read_text()
    stamps = [datetime.fromisoformat(m[:26]) for m in re.findall(r"^(?:start|end) (\S+)Z$", text, re.M)]
    assert (stamps[1] - stamps[0]).total_seconds() < 60  # seconds, not minutes
    status = dict(con.execute("select run_id, capacity_status from daily_capacity").fetchall())
    assert status["e-smtp-source-s5"] == "short"
    series = seed_series()
    for run_id, full in series.items():
        assert status[run_id] == ("ok" if len(full) >= 3 else "short"), run_id
    # the Capacity dashboard's dataset leaves short runs out by default
    top = con.execute(
        "select run_id from daily_capacity where capacity_status = 'ok' "
        "order by coalesce(capacity_msgs_per_day, 0) desc limit 1"
    ).fetchone()[0]
    assert top != "e-smtp-source-s5"


def test_error_bursts_count_one_source(con):
    """#16.3: the Error bursts dataset and error_bursts count postal's error lines only (a
    rejected recipient is also a maillog reject line: counting both doubled d-errors)."""
    import yaml

    postal = (SAMPLES / "runs/d-errors-rcpt-rejects/postal.csv").read_text().splitlines()
    server_errors = sum(line.startswith("Server error:") for line in postal)
    errors = sum(int(line.split(",")[3]) for line in postal if re.match(r"\d\d:\d\d,", line))
    dataset = yaml.safe_load(
        (SAMPLES.parent / "dashboards/datasets/mtabench/error_events_by_code.yaml").read_text()
    )
    coded = con.execute(
        f"select count(*) from ({dataset['sql']}) where run_id = 'd-errors-rcpt-rejects' "
        "and regexp_matches(code, '^[45][0-9][0-9]')"
    ).fetchone()[0]
    assert coded == server_errors == 769
    dominant, burst_errors = con.execute(
        "select dominant_code_events, errors from error_bursts where run_id = 'd-errors-rcpt-rejects'"
    ).fetchone()
    assert burst_errors == errors == 715
    assert dominant <= burst_errors
    assert (
        con.execute("select count(*) from error_bursts where dominant_code_events > errors").fetchone()[0]
        == 0
    )


def test_run_summary_does_not_extrapolate_short_runs(built_db):
    from mtabench.cli.summary import notes, render, summary_rows

    series = seed_series()
    short = {"e-smtp-source-s5"} | {run_id for run_id, full in series.items() if len(full) < 3}
    assert len(short) >= 2  # the smtp-source run and at least one seed segment
    table = {line.split()[0]: line.split()[-1] for line in render(summary_rows(built_db)).splitlines()[2:]}
    for run_id in short:
        assert table[run_id] == "short", (run_id, table[run_id])
    assert all(table[r] != "short" for r in series if r not in short)
    said = "\n".join(notes(built_db))
    for run_id in short:
        assert f"{run_id}: no daily capacity: too short" in said
