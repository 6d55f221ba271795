"""A run whose load generator output is damaged (a NUL byte in a row, a non-numeric field, a
"Segmentation fault" line) is not rated: runs.status is partial, daily_capacity says partial,
and the Capacity dashboard's dataset leaves it out, beside an intact copy that stays ok."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import duckdb
import yaml
from conftest import REPO, SAMPLES

MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]
BASE = SAMPLES / "runs/a-baseline-t5"
DAMAGE = ["22:08,49\x0054,11804,0,4902,0", "22:09,abc,11804,0,4902,0"]
ROW = re.compile(r"^\d\d:\d\d(,\d+){5}$")  # postal's per-minute row
NOISE = {"Server timed out on read."}  # postal's known message, not a row


def test_damaged_load_output_is_partial_and_left_out_of_capacity(tmp_path):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "a-baseline-t5")
    damaged = archive / "damaged"
    shutil.copytree(BASE, damaged)
    toml = damaged / "run.toml"
    toml.write_text(toml.read_text().replace('run_id = "a-baseline-t5"', 'run_id = "damaged"'))
    lines = (damaged / "postal.csv").read_text().splitlines()
    lines[3:3] = DAMAGE
    lines.append("Segmentation fault")
    (damaged / "postal.csv").write_text("\n".join(lines) + "\n")
    # the oracle: lines that are neither the header, a row nor postal's known message
    bad = [ln for ln in lines[1:] if not ROW.match(ln) and ln not in NOISE]
    assert len(bad) == 3

    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    env["MTABENCH_DATA"] = str(tmp_path / "data")
    proc = subprocess.run(
        [*MTABENCH, "run", str(archive)], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"damaged: no daily capacity: load generator output damaged: {len(bad)} line(s)" in proc.stdout

    serving = tmp_path / "data/serving/mtabench.duckdb"
    dataset = yaml.safe_load((REPO / "dashboards/datasets/mtabench/capacity_by_setting.yaml").read_text())
    with duckdb.connect(str(serving), read_only=True) as con:
        status = dict(con.execute("select run_id, status from runs").fetchall())
        capacity = dict(con.execute("select run_id, capacity_status from daily_capacity").fetchall())
        shown = {r[0] for r in con.execute(f"select distinct run_id from ({dataset['sql']})").fetchall()}
    assert status == {"a-baseline-t5": "ok", "damaged": "partial"}
    assert capacity == {"a-baseline-t5": "ok", "damaged": "partial"}
    assert shown == {"a-baseline-t5"}, "the Capacity dashboard shows a run with damaged load output"


def test_a_postal_row_pattern_tells_rows_from_damage():
    """The oracle above is not vacuous: the intact sample has rows and no damage."""
    lines = (BASE / "postal.csv").read_text().splitlines()[1:]
    assert sum(bool(ROW.match(ln)) for ln in lines) == 4
    assert all(ROW.match(ln) or ln in NOISE for ln in lines)
    assert not any(ROW.match(ln) for ln in DAMAGE)
