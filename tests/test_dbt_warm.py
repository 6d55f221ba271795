"""`mtabench run` starts dbt beside ingest (mtabench/dbt_warm.py): when ingest fails, that
dbt ends without building and leaves no process behind."""

from __future__ import annotations

import os
from pathlib import Path

from mtabench.cli import main


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
    assert _children_running("mtabench.dbt_warm") == []
    # it parsed the project (dbt's manifest) but built nothing (no run results, no database)
    assert (data / "dbt_target" / "manifest.json").exists()
    assert not (data / "dbt_target" / "run_results.json").exists()
    assert not (data / "mtabench.duckdb").exists()
