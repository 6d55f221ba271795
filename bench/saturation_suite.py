"""How well the saturation change-point method finds known steps: a synthetic suite.

Generates minute series with known change points (steady runs with 2-10 % noise, lone outlier
minutes, slow drifts; abrupt steps and ramps over 2-4 minutes of 10-50 %, steps that recover,
two steps in a row; runs of 5-90 minutes), runs the project's own detection on them (the dbt
macro `saturation_change_points`, compiled by `dbt compile --inline` and run in DuckDB: the
same SQL the `int_saturation__events` model runs) and prints:

- recall on persistent steps (>= 20 %, >= 3 minutes): a true start found within +-1 minute;
- the false-positive rate on steady series (a series with any event);
- the start error of the steps found.

    uv run --frozen python bench/saturation_suite.py [--series 1000] [--seed 7] [--json]

Goals: recall >= 95 %, false positives <= 5 %, start within +-1 minute.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtabench.paths import DBT_PROJECT, Paths  # noqa: E402
from mtabench.pipeline.dbt import dbt_env  # noqa: E402

KINDS = ("steady", "steady_outlier", "steady_drift", "step", "ramp", "step_recover", "two_steps")
STEADY = {"steady", "steady_outlier", "steady_drift"}
MIN_STEP, MIN_PERSIST = 0.20, 3  # what the recall goal is over
GOALS = {"recall": 0.95, "false_positive_rate": 0.05}


@dataclass
class Series:
    run_id: str
    kind: str
    noise: float
    rates: list[float]
    # known change points: (first lower minute, drop fraction, minutes at the new level)
    steps: list[tuple[int, float, int]] = field(default_factory=list)


def generate(n: int, seed: int) -> list[Series]:
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        kind = KINDS[k % len(KINDS)]
        stepped = kind not in STEADY
        length = int(rng.integers(8 if stepped else 5, 91))
        level = float(rng.uniform(300, 8000))
        noise = float(rng.uniform(0.02, 0.10))
        mult = np.ones(length)
        steps: list[tuple[int, float, int]] = []
        if kind == "steady_drift":  # up to 15 % over the whole run, either way
            mult *= 1 + rng.uniform(-0.15, 0.15) * np.arange(length) / (length - 1)
        if stepped:
            drop = float(rng.uniform(0.10, 0.50))
            ramp = int(rng.integers(2, 5)) if kind == "ramp" else 1  # minutes to the new level
            start = int(rng.integers(3, max(4, length - 2 - ramp)))
            end = length
            if kind == "step_recover":
                end = min(length, start + ramp - 1 + int(rng.integers(3, 12)))
            for j in range(start, end):
                mult[j] *= 1 - drop * min(1.0, (j - start + 1) / ramp)
            steps.append((start, drop, end - (start + ramp - 1)))
            second = start + ramp - 1 + int(rng.integers(4, 10))
            if kind == "two_steps" and second <= length - 3:
                drop2 = float(rng.uniform(0.2, 0.4))
                mult[second:] *= 1 - drop2
                steps.append((second, drop2, length - second))
        rates = level * mult * (1 + rng.normal(0, noise, length))
        if kind == "steady_outlier":  # one or two lone minutes far off the level
            for _ in range(int(rng.integers(1, 3))):
                j = int(rng.integers(0, length))
                rates[j] *= float(rng.choice([rng.uniform(0.3, 0.7), rng.uniform(1.2, 1.5)]))
        rates = np.maximum(np.round(rates), 1.0)
        out.append(Series(f"synthetic-{k:04d}-{kind}", kind, noise, rates.tolist(), steps))
    return out


def compiled_detection(source_sql: str, work: Path) -> str:
    """The macro's SQL for this engine, as dbt compiles it (project vars included)."""
    data = work / "data"
    env = dbt_env(Paths(db=data / "compile.duckdb", data_dir=data))
    inline = "{{ saturation_change_points(" + json.dumps(source_sql) + ") }}"
    exe = Path(sys.executable).parent / "dbt"
    out = subprocess.run(
        [str(exe), "compile", "--quiet", "--inline", inline, "--project-dir", str(DBT_PROJECT)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def detect(series: list[Series], work: Path) -> dict[str, list[int]]:
    """run_id -> event start indexes (0-based minute of the series), by the project's SQL."""
    t0 = datetime(2026, 1, 1)
    rows = [
        (s.run_id, t0 + timedelta(minutes=i), i, f"{i:04d}", r) for s in series for i, r in enumerate(s.rates)
    ]
    con = duckdb.connect()
    con.execute(
        "create table synthetic_minutes (run_id varchar, minute_at timestamp, minute_offset bigint, "
        "clock_label varchar, rate double)"
    )
    con.executemany("insert into synthetic_minutes values (?, ?, ?, ?, ?)", rows)
    sql = compiled_detection("select * from synthetic_minutes", work)
    found: dict[str, list[int]] = {s.run_id: [] for s in series}
    for run_id, offset in con.execute(f"select run_id, start_minute_offset from ({sql})").fetchall():
        found[run_id].append(int(offset))
    return found


def score(series: list[Series], found: dict[str, list[int]]) -> dict:
    hits = misses = flagged = steady = 0
    errors: list[int] = []
    for s in series:
        starts = found[s.run_id]
        if s.kind in STEADY:
            steady += 1
            flagged += bool(starts)
            continue
        for start, drop, persist in s.steps:
            if drop < MIN_STEP or persist < MIN_PERSIST:
                continue
            near = [abs(f - start) for f in starts if abs(f - start) <= 1]
            if near:
                hits += 1
                errors.append(min(near))
            else:
                misses += 1
    return {
        "series": len(series),
        "steady_series": steady,
        "persistent_steps": hits + misses,
        "recall": hits / max(hits + misses, 1),
        "false_positive_rate": flagged / max(steady, 1),
        "start_error_exact": errors.count(0),
        "start_error_one": errors.count(1),
    }


def run(n: int, seed: int) -> dict:
    series = generate(n, seed)
    with tempfile.TemporaryDirectory(prefix="saturation-suite-") as tmp:
        found = detect(series, Path(tmp))
    return score(series, found)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--series", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = run(args.series, args.seed)
    result["seed"] = args.seed
    if args.json:
        print(json.dumps(result))
    else:
        print(
            f"{result['series']} series (seed {args.seed}): {result['persistent_steps']} persistent steps "
            f">= {MIN_STEP:.0%}, {result['steady_series']} steady series\n"
            f"recall (start within +-1 minute): {result['recall']:.1%} (goal >= {GOALS['recall']:.0%})\n"
            f"false positives on steady series: {result['false_positive_rate']:.1%} "
            f"(goal <= {GOALS['false_positive_rate']:.0%})\n"
            f"start error of the steps found: 0 min {result['start_error_exact']}, "
            f"1 min {result['start_error_one']}"
        )
    met = (
        result["recall"] >= GOALS["recall"] and result["false_positive_rate"] <= GOALS["false_positive_rate"]
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
