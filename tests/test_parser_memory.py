"""The memory `mtabench ingest` needs does not grow with the length of a file: a vmstat four
times as long peaks at about the same RSS (each batch of lines is landed and dropped).

Two gzipped `vmstat -t 1` captures (bench/vmstat_log.py), 20 MB and 80 MB of text, each
ingested by `mtabench ingest` in a subprocess into its own data folder. Its peak RSS: os.wait4's
ru_maxrss, unless that is no more than this process's own peak (Linux carries the parent's
high-water mark across fork and exec into the child's ru_maxrss, and pytest may have grown
past the ingest by then); the child's own VmHWM, which starts at exec, is then the figure.
The lines landed are checked against the generator's counts."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from vmstat_log import build_vmstat  # noqa: E402

MB = 1_000_000


# `mtabench ingest ARCHIVE`, then the process's own peak RSS (VmHWM, KiB) on the last line
INGEST = """
import sys
from mtabench.cli.main import main
rc = main(["ingest", sys.argv[1]])
print(next(ln.split()[1] for ln in open("/proc/self/status") if ln.startswith("VmHWM")))
sys.exit(rc)
"""


def _ingest_peak_rss(archive: Path, data: Path) -> int:
    """Peak RSS (KiB) of `mtabench ingest archive`, and its exit checked."""
    env = dict(os.environ, MTABENCH_DATA=str(data))
    own_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out, err = data.with_suffix(".out"), data.with_suffix(".err")
    argv = [sys.executable, "-c", INGEST, str(archive)]
    with out.open("wb") as fout, err.open("wb") as ferr:  # files: a full pipe would block it
        proc = subprocess.Popen(argv, env=env, stdout=fout, stderr=ferr)
        _, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, err.read_text(errors="replace")[-2000:]
    return usage.ru_maxrss if usage.ru_maxrss > own_peak else int(out.read_text().split()[-1])


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
    shown = {f"{k} MB": f"{v / 1024:.0f} MiB peak RSS" for k, v in peaks.items()}
    print(shown, f"ratio {peaks[80] / peaks[20]:.2f}")  # shown with pytest -s
    assert peaks[80] <= 1.3 * peaks[20], shown
