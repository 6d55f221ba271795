"""DuckDB's memory and thread limits come from the environment, for our connections and dbt's."""

from __future__ import annotations

import duckdb

from ingest.resources import apply_limits
from mtabench.paths import Paths
from mtabench.pipeline.dbt import run_dbt


def _settings(con) -> tuple[str, int]:
    return con.execute(
        "select (select value from duckdb_settings() where name = 'memory_limit'), current_setting('threads')"
    ).fetchone()


def test_limits_default_and_follow_the_environment(monkeypatch):
    monkeypatch.delenv("MTABENCH_DUCKDB_MEMORY_LIMIT", raising=False)
    monkeypatch.delenv("MTABENCH_DUCKDB_THREADS", raising=False)
    with duckdb.connect() as con:
        apply_limits(con)
        assert _settings(con) == ("953.6 MiB", 2)  # 1 GB (10^9 bytes) as DuckDB prints it
    monkeypatch.setenv("MTABENCH_DUCKDB_MEMORY_LIMIT", "1GiB")
    monkeypatch.setenv("MTABENCH_DUCKDB_THREADS", "1")
    with duckdb.connect() as con:
        apply_limits(con)
        assert _settings(con) == ("1.0 GiB", 1)


def test_dbt_connections_get_the_same_limits(tmp_path, monkeypatch):
    monkeypatch.setenv("MTABENCH_DUCKDB_MEMORY_LIMIT", "1GiB")
    monkeypatch.setenv("MTABENCH_DUCKDB_THREADS", "1")
    db = tmp_path / "x.duckdb"
    duckdb.connect(str(db)).close()
    lines: list[str] = []
    query = "select current_setting('memory_limit') as mem, current_setting('threads') as thr"
    run_dbt(Paths(db=db, data_dir=tmp_path), ["show", "--inline", query], progress=lines.append)
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines if line.startswith("|")]
    assert rows[0] == ["mem", "thr"] and rows[-1] == ["1.0 GiB", "1"], lines
