"""The saturation method on generated series with known change points: a fixed-seed slice of
bench/saturation_suite.py (the bench's full suite gives the figures quoted in
bench/RESULTS.md). The detection is the project's own macro, compiled by dbt and run in
DuckDB; the expectations are the generator's known steps, not our output."""

from __future__ import annotations

import importlib.util
import sys

from tests.conftest import REPO

spec = importlib.util.spec_from_file_location("saturation_suite", REPO / "bench" / "saturation_suite.py")
suite = importlib.util.module_from_spec(spec)
sys.modules["saturation_suite"] = suite  # its dataclasses look their module up
spec.loader.exec_module(suite)


def test_known_steps_are_found_and_steady_series_are_not_flagged(tmp_path):
    series = suite.generate(280, seed=11)  # 40 series of each of the 7 kinds
    found = suite.detect(series, tmp_path)
    result = suite.score(series, found)
    assert result["persistent_steps"] >= 120 and result["steady_series"] == 120
    # a slice is noisier than the bench's 1,000 series: bounds a little under its goals
    assert result["recall"] >= 0.90, result
    assert result["false_positive_rate"] <= 0.08, result
    # a found step starts within a minute of the true one, and most exactly there
    assert result["start_error_exact"] > 3 * result["start_error_one"], result
