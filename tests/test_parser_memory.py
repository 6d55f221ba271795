"""The memory `mtabench ingest` needs does not grow with the length of a file: a vmstat four
times as long peaks at about the same RSS (each batch of lines is landed and dropped).

Two gzipped `vmstat -t 1` captures (bench/vmstat_log.py), 20 MB and 80 MB of text, each
ingested by `mtabench ingest` in a subprocess into its own data folder; the peak RSS comes
from os.wait4's ru_maxrss. The lines landed are checked against the generator's counts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from vmstat_log import build_vmstat  # noqa: E402

MB = 1_000_000


def _ingest_peak_rss(archive: Path, data: Path) -> int:
    """Peak RSS (KiB) of `mtabench ingest archive`, and its exit checked."""
    env = dict(os.environ, MTABENCH_DATA=str(data))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mtabench.cli", "ingest", str(archive)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    assert os.waitstatus_to_exitcode(status) == 0, err[-2000:]
    return usage.ru_maxrss


def test_peak_rss_does_not_grow_with_the_file(tmp_path):
    peaks = {}
    for size in (20, 80):
        run = tmp_path / f"archive{size}" / f"vmstat-{size}mb"
        run.mkdir(parents=True)
        _, lines, rows = build_vmstat(run / "vmstat.txt.gz", size * MB)
        data = tmp_path / f"data{size}"
        peaks[size] = _ingest_peak_rss(run.parent, data)
        with duckdb.connect(str(data / "mtabench.duckdb"), read_only=True) as con:
            landed = con.execute(
                "select lines_total, lines_parsed, lines_noise, lines_quarantined from raw.files"
                " where format = 'vmstat'"
            ).fetchone()
        assert landed == (lines, rows, lines - rows, 0)
    assert peaks[80] <= 1.3 * peaks[20], {f"{k} MB": f"{v / 1024:.0f} MiB peak RSS" for k, v in peaks.items()}
