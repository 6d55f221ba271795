"""QueueSizesParser on the sampler's queue.txt files."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from conftest import found, land_file

from ingest.parsers.queue_sizes import QueueSizesParser

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = found((ROOT / "samples" / "runs").glob("*/queue.txt"), "queue.txt")


@pytest.fixture
def con(landing_con):
    return landing_con


def land(con, path: Path):
    return land_file(con, QueueSizesParser(), path, file_id=3)


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.parent.name)
def test_samples(con, path):
    lines = path.read_text().splitlines()
    counts = land(con, path)
    assert (counts.total, counts.parsed, counts.noise, counts.quarantined) == (
        len(lines),
        len(lines) - 1,
        1,
        0,
    )
    first = con.execute("select * from raw.queue_samples order by line_no limit 1").fetchone()
    at, *nums = lines[1].split(",")
    assert first[1] == 2 and first[3] == datetime.fromisoformat(at.replace("Z", ""))
    assert list(first[4:]) == [int(n) for n in nums]


def test_backlog_grows(con):
    land(con, ROOT / "samples" / "runs" / "c-throttled-queue-backlog" / "queue.txt")
    peak = con.execute("select max(incoming + active + deferred) from raw.queue_samples").fetchone()[0]
    assert peak > 100


def test_bad_row_quarantined(con, tmp_path):
    p = tmp_path / "queue.txt"
    p.write_text(
        "utc,incoming,active,deferred,maildrop\n2026-11-21T22:05:06Z,1,2,3,4\n2026-11-21T22:05:11Z,x\n\n"
    )
    counts = land(con, p)
    assert (counts.total, counts.parsed, counts.noise, counts.quarantined) == (4, 1, 2, 1)
    assert QueueSizesParser().sniff(p.read_text(), "queue.txt") >= 90
