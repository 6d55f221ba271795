"""Which setting won compares any two runs: the dashboard's dataset SQL, rendered with the
filters as Superset renders it (tests/dataset_sql.py), on the published serving file.

Oracles: the ministat binary on the full minutes read straight from the runs' load-generator
files (regexes over the raw lines, tests/test_answers.py), the manifests' -r caps, and the
default-baseline rule applied in Python to the runs' start times.
"""

from __future__ import annotations

import re
import subprocess

from dataset_sql import dataset, query
from test_answers import postal_runs
from test_ministat import _ministat

from tests.conftest import SAMPLES

CANDIDATE = "seed000-s12-disk-rw-4096-2048"
OTHER_GROUP = "a-baseline-t5"  # postfix and postal too, but compared in another group
CSV_ROW = re.compile(r"^\d\d:\d\d,(\d+),", re.M)


def _raw_full_minutes(run_id: str) -> list[int]:
    if run_id.startswith("seed000-"):
        folder = SAMPLES / "seed000" / run_id.removeprefix("seed000-")
        return [n for _, n in postal_runs(folder)[0][1:]]
    folder = next(p for p in (SAMPLES / "runs" / run_id, SAMPLES / "variants" / run_id) if p.exists())
    text = (folder / "postal.csv").read_text()
    return [int(n) for n in CSV_ROW.findall(text)][1:]  # the first row is a partial minute


def _ministat_says(tmp_path, a: list[int], b: list[int], confidence: float) -> str:
    files = []
    for name, values in (("a", a), ("b", b)):
        f = tmp_path / name
        f.write_text("".join(f"{v}\n" for v in values))
        files.append(str(f))
    out = subprocess.run(
        [_ministat(), "-c", f"{confidence:g}", *files], capture_output=True, text=True, check=True
    ).stdout
    return out


def test_the_dataset_calls_compare_runs_not_a_copy():
    sql = dataset("which_setting_won_verdict")["sql"]
    assert "compare_runs(" in sql
    assert "sqrt(" not in sql and "student_t as" not in sql  # no second copy of the arithmetic


def test_default_baseline_is_the_latest_earlier_run_of_the_same_mta_and_tool(serving_con):
    runs = serving_con.execute("select run_id, mta, tool, started_at, full_minutes from runs").fetchall()
    got = dict(serving_con.execute("select run_id, baseline_run_id from run_baselines").fetchall())
    assert len(got) == len(runs) == 56
    for run_id, mta, tool, started, _ in runs:
        peers = [r for r in runs if r[0] != run_id and r[1] == mta and r[2] == tool and r[4] >= 2]
        earlier = sorted((r for r in peers if r[3] < started), key=lambda r: (r[3], r[0]))
        later = sorted((r for r in peers if r[3] >= started), key=lambda r: (r[3], r[0]))
        want = earlier[-1][0] if earlier else later[0][0] if later else None
        assert got[run_id] == want, run_id
    assert got[CANDIDATE] == "seed000-s12-disk-rw-8192-4096"


def test_verdict_of_a_pair_outside_comparisons_is_ministats(serving_con, tmp_path):
    in_comparisons = serving_con.execute(
        "select count(*) from comparisons where baseline = ? and candidate = ?", [OTHER_GROUP, CANDIDATE]
    ).fetchone()[0]
    assert in_comparisons == 0
    a, b = _raw_full_minutes(OTHER_GROUP), _raw_full_minutes(CANDIDATE)
    assert len(a) == 3 and len(b) == 4
    for confidence in (80.0, 95.0, 99.5):
        rows = query(
            serving_con,
            "which_setting_won_verdict",
            {"baseline": [OTHER_GROUP], "candidate": [CANDIDATE], "confidence": [confidence]},
        )
        assert len(rows) == 1
        row = rows[0]
        out = _ministat_says(tmp_path, a, b, confidence)
        verdict = next(line for line in out.splitlines() if "confidence" in line)
        assert row["verdict"] == verdict.strip()
        assert (row["n_baseline"], row["n_candidate"]) == (len(a), len(b))
        m = re.search(r"^\s+(-?[\d.]+) \+/- ([\d.]+)\n\s+(-?[\d.]+)% \+/- ([\d.]+)%", out, re.M)
        assert bool(m) == verdict.strip().startswith("Difference at")  # printed when significant
        if m:
            assert abs(row["difference"] - float(m.group(1))) <= 0.05 + 1e-6 * abs(float(m.group(1)))
            assert abs(row["margin"] - float(m.group(2))) <= 0.05 + 1e-6 * float(m.group(2))


def test_default_pair_and_a_picked_baseline(serving_con):
    default = query(
        serving_con, "which_setting_won_verdict", {"candidate": [CANDIDATE], "confidence": [95.0]}
    )
    assert [(r["baseline"], r["candidate"]) for r in default] == [
        ("seed000-s12-disk-rw-8192-4096", CANDIDATE)
    ]
    minutes = query(
        serving_con, "which_setting_won_minutes", {"candidate": [CANDIDATE], "baseline": [OTHER_GROUP]}
    )
    by_side: dict[str, list[int]] = {}
    for r in sorted(minutes, key=lambda r: r["minute_offset"]):
        by_side.setdefault(r["side"], []).append(r["messages"])
    assert by_side == {
        f"1 baseline: {OTHER_GROUP}": _raw_full_minutes(OTHER_GROUP),
        f"2 candidate: {CANDIDATE}": _raw_full_minutes(CANDIDATE),
    }


def test_too_few_full_minutes_is_said_not_an_empty_chart(serving_con):
    # tls-sasl: its postal.csv has one row, the partial first minute: no full minute
    assert _raw_full_minutes("tls-sasl") == []
    rows = query(serving_con, "which_setting_won_verdict", {"candidate": ["tls-sasl"]})
    assert len(rows) == 6  # one per confidence: the confidence filter keeps one
    assert all(r["verdict"].startswith("Too few full minutes for ministat (2 a side)") for r in rows)
    assert all(r["verdict"].endswith("candidate 0") for r in rows)
    alone = query(
        serving_con, "which_setting_won_verdict", {"candidate": ["dovecot-custom"], "confidence": [95.0]}
    )
    assert len(alone) == 1 and alone[0]["verdict"].startswith("No baseline")


def test_a_generator_bound_run_is_flagged_in_the_verdict(serving_con):
    # the manifest's -r cap, and at least half the full minutes within 5 % of it (raw lines)
    cap = int(
        re.search(r"-r (\d+)", (SAMPLES / "seed000/s12-disk-rw-4096-2048/run.toml").read_text()).group(1)
    )
    minutes = _raw_full_minutes(CANDIDATE)
    assert 2 * sum(m >= 0.95 * cap for m in minutes) >= len(minutes)
    assert "-r " not in (SAMPLES / "runs" / OTHER_GROUP / "run.toml").read_text()  # no cap: not bound
    row = query(
        serving_con,
        "which_setting_won_verdict",
        {"baseline": [OTHER_GROUP], "candidate": [CANDIDATE], "confidence": [95.0]},
    )[0]
    assert row["candidate_bound_by"] == "generator"
    assert row["caveat"] == "candidate generator-bound (-r cap): a lower bound"
