"""A dbt process that imports dbt and parses the project while ingest runs, then builds.

Adding one run to a large archive, dbt's own start-up was ~5 s of the build's critical
path: importing dbt (~3 s) and loading the project's manifest (~2 s), neither of which
depends on the data. `mtabench run` starts this module beside ingest, on the other core;
when ingest is done it writes the dbt arguments (a JSON list) on stdin and the build runs
on the parsed manifest (dbtRunner(manifest=...), dbt's documented way to reuse one). EOF
on stdin instead (ingest failed) exits without building.

    python -m mtabench.dbt_warm PROJECT_DIR    # stdin: ["build", "--full-refresh"]

Output and exit status are dbt's own: 0 success, 1 a failed node, 2 dbt itself failed.
"""

from __future__ import annotations

import json
import os
import sys
import traceback


def main(project_dir: str) -> int:
    from dbt.cli.main import dbtRunner

    # a parse that fails leaves no manifest: the build then parses and reports it itself
    parsed = dbtRunner().invoke(["parse", "--project-dir", project_dir])
    manifest = parsed.result if parsed.success else None
    sys.stdout.flush()
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    args = json.loads(line)
    result = dbtRunner(manifest=manifest).invoke([*args, "--project-dir", project_dir])
    if result.exception is not None:
        traceback.print_exception(result.exception, file=sys.stdout)
        return 2
    return 0 if result.success else 1


def _close_duckdb() -> None:
    """dbt-duckdb drops its database handle but keeps it alive until the interpreter tears
    down; closed here, the build's WAL is checkpointed before this process ends."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    DuckDBConnectionManager.close_all_connections()


if __name__ == "__main__":
    code = main(sys.argv[1])
    _close_duckdb()
    sys.stdout.flush()
    sys.stderr.flush()
    # tearing down the interpreter (millions of dbt objects) took another ~1 s of the critical
    # path; the semaphores dbt's multiprocessing context leaves are then reported by the
    # resource tracker, which WarmDbt.start silences (-W)
    os._exit(code)
