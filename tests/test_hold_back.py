"""One run whose own rows fail validation is held back; the others publish. A check that
spans runs still stops the publish (mtabench/pipeline/hold_back.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import duckdb
import pytest
from conftest import SAMPLES

from expectations.validate import Failure, ValidationFailed
from mtabench.pipeline.hold_back import validate_holding_back

MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]
BASE = SAMPLES / "runs/a-baseline-t5"


def _served(path) -> tuple[dict, set]:
    with duckdb.connect(str(path), read_only=True) as con:
        runs = {
            r[0]: (r[1], r[2])
            for r in con.execute("select run_id, status, status_reason from runs").fetchall()
        }
        minutes = {r[0] for r in con.execute("select distinct run_id from minutes").fetchall()}
    return runs, minutes


def test_a_run_failing_its_own_checks_is_held_back_and_the_rest_publish(tmp_path):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "a-baseline-t5")
    shutil.copytree(BASE, archive / "skewed")
    toml = archive / "skewed/run.toml"
    good = toml.read_text().replace('run_id = "a-baseline-t5"', 'run_id = "skewed"')
    # its load six days after its own log lines: its minutes start 8,640 minutes early
    toml.write_text(good.replace("2026-11-21T", "2026-11-27T"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    env["MTABENCH_DATA"] = str(tmp_path / "data")
    proc = subprocess.run(
        [*MTABENCH, "run", str(archive)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "skewed: held back: [marts] minutes: expect_column_values_to_be_between" in proc.stdout
    runs, minutes = _served(tmp_path / "data/serving/mtabench.duckdb")
    assert runs["a-baseline-t5"][0] == "ok" and runs["skewed"][0] == "held"
    assert "minute_offset" in runs["skewed"][1]
    assert minutes == {"a-baseline-t5"}
    # fixed, it publishes whole (its rows were not left out of the incremental publish's record)
    toml.write_text(good)
    proc = subprocess.run(
        [*MTABENCH, "run", str(archive)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs, minutes = _served(tmp_path / "data/serving/mtabench.duckdb")
    assert {r: s for r, (s, _) in runs.items()} == {"a-baseline-t5": "ok", "skewed": "ok"}
    assert minutes == {"a-baseline-t5", "skewed"}


def _failure(per_run: bool, runs: list[str]) -> Failure:
    return Failure("marts", "c", "expect_x", {}, "1 of 2 rows unexpected", per_run, runs)


def test_a_check_across_runs_still_stops_the_publish():
    def cross(held):
        raise ValidationFailed([_failure(False, ["a"])], None)

    with pytest.raises(ValidationFailed):
        validate_holding_back(cross)

    def one_run(held):
        if "b" not in held:
            raise ValidationFailed([_failure(True, ["b"])], None)

    assert set(validate_holding_back(one_run)) == {"b"}
