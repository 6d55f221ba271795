"""`mtabench run` starts dbt beside ingest (mtabench/pipeline/dbt_warm.py): when ingest fails, that
dbt ends without building and leaves no process behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
from conftest import SAMPLES

from mtabench.cli.main import main


def _children_running(module: str) -> list[int]:
    """Our child processes whose command line names `module`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue  # exited meanwhile
        if int(fields[1]) == os.getpid() and module in cmdline:
            found.append(int(stat.parent.name))
    return found


def test_failed_ingest_ends_the_waiting_dbt_without_a_build(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("MTABENCH_DATA", str(data))
    assert main(["run", str(tmp_path / "no-such-archive"), "--db", str(data / "mtabench.duckdb")]) == 2
    assert _children_running("mtabench.pipeline.dbt_warm") == []
    # it parsed the project (dbt's manifest) but built nothing (no run results, no database)
    assert (data / "dbt_target" / "manifest.json").exists()
    assert not (data / "dbt_target" / "run_results.json").exists()
    assert not (data / "mtabench.duckdb").exists()


def test_a_failing_dbt_test_fails_the_warm_build(tmp_path):
    """The warm dbt renders the tests' plain arguments before the build (dbt_warm.
    _render_plain_test_arguments); a test those arguments name still fails the build, with
    dbt's count of the failing rows (here: the queue samples' maildrop count taken away from
    the landing after ingest, so int_queue__minutes.queue_sampled is null in every minute)."""
    archive, data = tmp_path / "archive", tmp_path / "data"
    shutil.copytree(SAMPLES / "runs" / "a-baseline-t5", archive / "a-baseline-t5")
    env = {**os.environ, "MTABENCH_DATA": str(data)}
    env.pop("MTABENCH_DB", None)
    cli = [sys.executable, "-m", "mtabench.cli.main"]
    subprocess.run([*cli, "ingest", str(archive)], env=env, check=True, capture_output=True)
    with duckdb.connect(str(data / "mtabench.duckdb")) as con:
        (samples,) = con.execute("select count(*) from raw.queue_samples").fetchone()
        con.execute("update raw.queue_samples set maildrop = null")
    assert samples > 0
    out = subprocess.run([*cli, "run", str(archive)], env=env, capture_output=True, text=True)
    assert out.returncode == 4, out.stdout[-3000:]
    with duckdb.connect(str(data / "mtabench.duckdb"), read_only=True) as con:
        (nulls,) = con.execute(
            "select count(*) from intermediate.int_queue__minutes where queue_sampled is null"
        ).fetchone()
    assert nulls > 0
    assert (
        f"column_checks_int_queue__minutes: queue_sampled not_null {nulls} row(s)" in out.stdout + out.stderr
    )
