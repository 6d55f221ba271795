"""A dbt process that imports dbt and parses the project while ingest runs, then builds.

Adding one run to a large archive, dbt's own start-up was ~5 s of the build's critical
path: importing dbt (~3 s) and loading the project's manifest (~2 s), neither of which
depends on the data. `mtabench run` starts this module beside ingest, on the other core;
when ingest is done it writes the dbt arguments (a JSON list) on stdin and the build runs
on the parsed manifest (dbtRunner(manifest=...), dbt's documented way to reuse one). EOF
on stdin instead (ingest failed) exits without building.

    python -m mtabench.pipeline.dbt_warm PROJECT_DIR    # stdin: ["build", "--full-refresh"]

Output and exit status are dbt's own: 0 success, 1 a failed node, 2 dbt itself failed.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import traceback


def main(project_dir: str) -> int:
    from dbt.cli.main import dbtRunner

    # a parse that fails leaves no manifest: the build then parses and reports it itself
    parsed = dbtRunner().invoke(["parse", "--project-dir", project_dir])
    manifest = parsed.result if parsed.success else None
    if manifest is not None:
        _render_plain_test_arguments(manifest)
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


def _render_plain_test_arguments(manifest) -> None:
    """Render every test argument without Jinja in it (a column name, an accepted value) now,
    while ingest runs. dbt renders each test's arguments when it compiles the test, a new
    Jinja context per string (~20 ms, most of a test's compile time, under the GIL), and keeps
    the result of a plain string for the rest of the process (dbt.clients.jinja.get_rendered):
    rendered here, the build finds them done. A string with Jinja in it (the tested model, a
    ref) needs the test's context and fails here; the build renders it as before."""
    from dbt.clients.jinja import get_rendered
    from dbt_common.utils.dict import deep_map_render  # the walk dbt's own rendering takes

    def render(value, _keypath):
        if isinstance(value, str):
            # a string with Jinja needs the test's context: it fails here and the build renders it
            with contextlib.suppress(Exception):
                get_rendered(value, {}, native=True)
        return value

    for node in manifest.nodes.values():
        if (meta := getattr(node, "test_metadata", None)) is not None:
            deep_map_render(render, meta.kwargs)


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
