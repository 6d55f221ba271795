"""The table `mtabench run` ends with stays short on a big archive: the runs this ingest
landed first, then the runs that are not ok, then the most recent; the rest is counted."""

from __future__ import annotations

from mtabench.cli.summary import pick


def _rows(n: int) -> list[dict]:
    # table order: by start; every 7th run failed
    return [{"run_id": f"r{i:04d}", "status": "failed" if i % 7 == 0 else "ok"} for i in range(n)]


def test_a_small_archive_shows_every_run():
    rows = _rows(12)
    assert pick(rows, set(), most=12) == (rows, 0)


def test_a_big_archive_shows_the_landed_runs_then_failures_then_the_latest():
    rows = _rows(1000)
    landed = {"r0003", "r0500"}
    shown, left_out = pick(rows, landed, most=10)
    ids = [r["run_id"] for r in shown]
    assert left_out == 990 and len(ids) == 10
    assert ids == sorted(ids)  # still in table order
    # the two landed runs, then the eight latest failures (multiples of 7 below 1000)
    failed = [f"r{i:04d}" for i in range(1000) if i % 7 == 0][-8:]
    assert set(ids) == landed | set(failed)


def test_a_folder_of_several_runs_counts_as_landed():
    rows = [{"run_id": f"x{i}", "status": "ok"} for i in range(5)] + [
        {"run_id": "seg#1", "status": "ok"},
        {"run_id": "seg#2", "status": "partial"},
    ]
    shown, left_out = pick(rows, {"seg"}, most=3)
    assert [r["run_id"] for r in shown] == ["x4", "seg#1", "seg#2"] and left_out == 4
