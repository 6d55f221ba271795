"""Running dbt on the project against a chosen DuckDB file."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from mtabench.paths import DBT_PROJECT, Paths


class DbtFailed(Exception):
    pass


def dbt_env(paths: Paths, target: str = "duckdb") -> dict[str, str]:
    env = dict(os.environ)
    # the spark engine runs the `spark` profile target, or `spark_thrift` for a cluster
    env["MTABENCH_TARGET"] = target if target == "duckdb" else os.environ.get("MTABENCH_SPARK_TARGET", target)
    env.setdefault("MTABENCH_SPARK_WAREHOUSE", str(paths.spark_dir / "warehouse"))
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env.update(
        MTABENCH_DB=str(paths.db),
        DBT_PROFILES_DIR=str(DBT_PROJECT),
        DBT_TARGET_PATH=str(paths.data_dir / "dbt_target"),
        DBT_LOG_PATH=str(paths.data_dir / "dbt_logs"),
        DBT_SEND_ANONYMOUS_USAGE_STATS="false",
    )
    return env


def run_dbt(
    paths: Paths, args: list[str], progress: Callable[[str], None] = print, target: str = "duckdb"
) -> None:
    exe = Path(sys.executable).parent / "dbt"
    cmd = [str(exe), *args, "--project-dir", str(DBT_PROJECT)]
    proc = subprocess.Popen(
        cmd, env=dbt_env(paths, target), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    tail: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-40:]
        # keep progress terse: one line per model/test result and the summary
        if any(
            k in line for k in (" OK created", " PASS ", " FAIL ", " ERROR ", " WARN ", "Done. ", "Completed")
        ):
            progress("  " + line.split("  ", 1)[-1].strip())
    if proc.wait() != 0:
        raise DbtFailed("dbt " + " ".join(args) + " failed:\n" + "\n".join(tail))
