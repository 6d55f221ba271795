"""Running dbt on the project against a chosen DuckDB file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from mtabench.engines.spark.session import driver_host
from mtabench.paths import DBT_PROJECT, Paths
from mtabench.pipeline.dbt_code import ENV as CODE_HASH_ENV
from mtabench.pipeline.dbt_code import code_hash
from mtabench.pipeline.dbt_failures import compiled_column_checks, explain
from mtabench.pipeline.lock import popen_tied

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CLOCK = re.compile(r"^\d\d:\d\d:\d\d  ")


def is_notable(line: str) -> bool:
    """A dbt output line worth the terminal: the summary and anything that failed."""
    starts = ("Done.", "Completed with", "Failure in", "Runtime Error", "Database Error")
    return line.startswith(starts) or any(k in line for k in (" FAIL ", " ERROR ", "[ERROR]"))


class DbtFailed(Exception):
    pass


PROJECT_STAMP = "mtabench_project_dir"  # in dbt's target folder: the project its parse is of


def forget_parse_of_another_project(target_dir: Path) -> None:
    """dbt's saved parse (partial_parse.msgpack) keeps the project's absolute paths, and dbt
    reuses it when the project has moved: a seed is then read from the old folder ("No files
    found that match the pattern", every build fails once the old checkout is gone). So the
    target folder notes which project it parsed, and a parse of another one is discarded."""
    here = str(DBT_PROJECT.resolve())
    stamp = target_dir / PROJECT_STAMP
    try:
        if stamp.read_text() == here:
            return
    except OSError:
        pass
    (target_dir / "partial_parse.msgpack").unlink(missing_ok=True)
    target_dir.mkdir(parents=True, exist_ok=True)
    stamp.write_text(here)


def dbt_env(paths: Paths, target: str = "duckdb") -> dict[str, str]:
    target_dir = paths.data_dir / "dbt_target"
    forget_parse_of_another_project(target_dir)
    env = dict(os.environ)
    env["MTABENCH_TARGET"] = target
    env.setdefault("MTABENCH_SPARK_WAREHOUSE", str(paths.spark_dir / "warehouse"))
    env.setdefault("SPARK_LOCAL_IP", driver_host())
    env.update(
        MTABENCH_DB=str(paths.db),
        DBT_PROFILES_DIR=str(DBT_PROJECT),
        DBT_TARGET_PATH=str(target_dir),
        DBT_LOG_PATH=str(paths.data_dir / "dbt_logs"),
        DBT_SEND_ANONYMOUS_USAGE_STATS="false",
    )
    env.setdefault(CODE_HASH_ENV, code_hash(DBT_PROJECT))
    # dbt's own log file (data/dbt_logs) at info, not its default debug: writing every
    # statement's debug events took ~10 % of dbt's CPU adding one run at 236x the samples.
    # DBT_LOG_LEVEL_FILE=debug brings the statements back.
    env.setdefault("DBT_LOG_LEVEL_FILE", "info")
    return env


@dataclass
class WarmDbt:
    """A dbt process started ahead of its build (mtabench/pipeline/dbt_warm.py): it imports dbt and
    parses the project while ingest runs. `run_dbt(..., warm=)` hands it its arguments;
    `close()` ends it unused."""

    proc: subprocess.Popen

    @classmethod
    def start(cls, paths: Paths, target: str = "duckdb") -> WarmDbt:
        # the filter reaches the resource tracker too (it inherits -W): see dbt_warm's exit
        quiet = ["-W", "ignore:resource_tracker:UserWarning"]
        cmd = [sys.executable, *quiet, "-m", "mtabench.pipeline.dbt_warm", str(DBT_PROJECT)]
        proc = popen_tied(
            cmd,
            env=dbt_env(paths, target),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        return cls(proc)

    def go(self, args: list[str]) -> subprocess.Popen:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(args) + "\n")
        self.proc.stdin.close()
        return self.proc

    def close(self) -> None:
        """End it unused (EOF: it exits without building); nothing if it already ran."""
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()
        if self.proc.stdout is not None:
            self.proc.stdout.read()  # parse output nobody reads: drained, so it can exit
        self.proc.wait()


def run_dbt(
    paths: Paths,
    args: list[str],
    progress: Callable[[str], None] = print,
    target: str = "duckdb",
    warm: WarmDbt | None = None,
    env: dict[str, str] | None = None,
) -> None:
    """`env`: set for this dbt only (the Spark build's warehouse and storage settings)."""
    if warm is not None:  # started by the caller with the same paths and target
        proc = warm.go(args)
    else:
        exe = Path(sys.executable).parent / "dbt"
        cmd = [str(exe), *args, "--project-dir", str(DBT_PROJECT)]
        # tied: if mtabench is killed, dbt dies too instead of holding the database lock
        proc = popen_tied(
            cmd,
            env={**dbt_env(paths, target), **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    tail: list[str] = []
    checks: list[str] = []  # lines naming a column_checks test's compiled code
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip()
        tail = (tail + [line])[-40:]
        if "column_checks_" in line:
            checks.append(_ANSI.sub("", line))
        # every line to the caller (the CLI keeps them in data/logs/dbt.log), without the clock
        progress(_CLOCK.sub("", _ANSI.sub("", line)))
    if proc.wait() != 0:
        found = explain(paths.db, compiled_column_checks(checks, DBT_PROJECT)) if target == "duckdb" else []
        for line in found:
            progress(line)
        raise DbtFailed("dbt " + " ".join(args) + " failed:\n" + "\n".join(tail + found))
