"""Run story: one run's minutes, settings and verdicts, from the dashboard's dataset SQL
(rendered as Superset renders it, tests/dataset_sql.py) on the published serving file.

Oracles: the run's manifest (tomllib: changed settings, the load generator's -r cap), its
load-generator rows read with a regex, the saturation events mart's own minutes for the marks
(the events are tested against seed 000's published figures in tests/test_answers.py)."""

from __future__ import annotations

import re
import tomllib

from dataset_sql import query

from tests.conftest import SAMPLES

RUN = "opensmtpd-queue-compression-off"
FOLDER = SAMPLES / "mtas" / RUN


def test_facts_give_settings_as_name_equals_value_and_the_verdict(serving_con):
    manifest = tomllib.loads((FOLDER / "run.toml").read_text())
    facts = query(serving_con, "run_story_facts", {"run_id": [RUN]})
    settings = sorted(f["value"] for f in facts if f["fact"] == "setting")
    assert settings == sorted(f"{k} = {v}" for k, v in manifest["mta"]["changed_settings"].items())
    by_fact = {f["fact"]: f["value"] for f in facts if f["fact"] != "setting"}
    assert set(by_fact) == {"run", "bound by", "capacity", "saturation events", "ministat vs baseline"}
    cap = int(re.search(r"-r (\d+)", manifest["tool"]["command"]).group(1))
    assert by_fact["bound by"].startswith("generator: ") and f"-r {cap}/min" in by_fact["bound by"]
    assert by_fact["capacity"].endswith("/min") and "msgs/day" in by_fact["capacity"]
    assert by_fact["saturation events"] == "none"
    # its default baseline is the other OpenSMTPD run (no earlier one), compared by compare_runs()
    verdict = by_fact["ministat vs baseline"]
    assert verdict.startswith("against opensmtpd-queue-compression-on ")
    assert "No difference proven at 95.0% confidence" in verdict and verdict.endswith("N 4 and 4")
    order = [f["fact_no"] for f in sorted(facts, key=lambda f: f["fact_no"])]
    assert order == sorted(order) and len(facts) == 6


def test_minutes_carry_the_cap_and_the_saturation_marks(serving_con):
    manifest = tomllib.loads((FOLDER / "run.toml").read_text())
    cap = int(re.search(r"-r (\d+)", manifest["tool"]["command"]).group(1))
    rows = query(serving_con, "run_story_minutes", {"run_id": [RUN]})
    loaded = [r for r in rows if r["messages"] is not None]
    raw = [int(n) for n in re.findall(r"^\d\d:\d\d,(\d+),", (FOLDER / "postal.csv").read_text(), re.M)]
    assert [r["messages"] for r in sorted(loaded, key=lambda r: r["minute_offset"])] == raw
    assert {r["rate_cap_per_min"] for r in loaded} == {cap}
    assert all(
        r["cpu_busy_pct"] is not None and r["queue_active"] is not None
        for r in rows
        if r["minute_offset"] >= 0
    )
    # a run with saturation events: exactly the event minutes are marked, with their messages
    seed = "seed000-s10-virtual-concurrency-10"
    events = serving_con.execute(
        "select start_minute_at, end_minute_at from saturation_events where run_id = ?", [seed]
    ).fetchall()
    minutes = serving_con.execute(
        "select minute_at, minute_offset from minutes where run_id = ?", [seed]
    ).fetchall()
    marked_want = {off for at, off in minutes if any(s <= at <= (e or s) for s, e in events)}
    story = query(serving_con, "run_story_minutes", {"run_id": [seed]})
    marked = {r["minute_offset"] for r in story if r["saturated_messages"] is not None}
    assert marked == marked_want and len(marked) >= 3
    assert all(r["saturated_messages"] == r["messages"] for r in story if r["saturated_messages"] is not None)


def test_errors_cover_every_minute_of_the_run(serving_con):
    rows = query(serving_con, "run_story_errors", {"run_id": [RUN]})
    minutes = {
        r[0]
        for r in serving_con.execute("select minute_offset from minutes where run_id = ?", [RUN]).fetchall()
    }
    assert {r["minute_offset"] for r in rows} == minutes
    # 524 5.2.4: the unknown recipients the manifest's notes name; grep counts postal's lines
    raw = (FOLDER / "postal.csv").read_text().count("524 5.2.4")
    assert raw > 0 and sum(r["errors"] for r in rows if r["code"] == "524 5.2.4") == raw
