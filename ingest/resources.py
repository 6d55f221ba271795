"""DuckDB's resource limits for the pipeline's own connections (ingest, validate) and dbt's.

DuckDB takes 80 % of RAM and every core by default; on a shared machine a large archive's
build then crowds out everything else (17.6 GB RSS at 6,000 runs). The limits come from the
environment with defaults that leave room beside other jobs; dbt reads the same variables in
`dbt_project/profiles.yml`. Past the limit DuckDB spills to its temporary directory
(`<db>.tmp` beside the file unless MTABENCH_DUCKDB_TEMP_DIR says otherwise). The 1GB default
holds every stage's peak RSS under 2 GB at 32x the samples (960 runs; with 4GB the build
reached 4.4 GB RSS), at the price of a slower build (spilling; docs/pipeline.md).
"""

from __future__ import annotations

import os

DEFAULTS = {
    "memory_limit": ("MTABENCH_DUCKDB_MEMORY_LIMIT", "1GB"),
    "threads": ("MTABENCH_DUCKDB_THREADS", "2"),
}


def duckdb_settings() -> dict[str, str]:
    out = {name: os.environ.get(var, default) for name, (var, default) in DEFAULTS.items()}
    if temp := os.environ.get("MTABENCH_DUCKDB_TEMP_DIR"):
        out["temp_directory"] = temp
    return out


def apply_limits(con) -> None:
    """SET (not connect-time config): another connection to the same file in this process,
    opened without a config, must keep working. Values are literals: DuckDB's first bound
    parameter in a process imports numpy and pandas (~0.35-0.9 s of each ingest)."""
    for name, value in duckdb_settings().items():
        literal = str(int(value)) if name == "threads" else "'" + value.replace("'", "''") + "'"
        con.execute(f"set {name} = {literal}")
