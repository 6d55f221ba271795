"""Task logic for the Airflow DAGs in dags/ (runs in the Airflow venv, not the data venv).

The Airflow environment (envs/airflow) has neither duckdb nor dbt nor Great Expectations:
every task calls the project CLI of the data venv (`<repo>/.venv/bin/mtabench`) in a
subprocess, and maps its exit status onto Airflow's retry semantics:

- 0: success;
- 3 (a failed expectation) and 2 (usage error): AirflowFailException, no retry; the
  message carries the CLI's report naming each failed expectation;
- 4 (a failed dbt build: a model or test failed): AirflowFailException with the CLI's tail,
  no retry (the same build fails the same way; the next DAG run builds again);
- anything else (a DuckDB lock held by someone else, an I/O error, a crash): a plain
  exception, retried with exponential backoff.

Only the standard library is imported at module level, so DAG parsing stays cheap.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from ingest.settled import settle_from_env
from mtabench.pipeline.dbt_code import ENV as CODE_HASH_ENV
from mtabench.pipeline.dbt_code import code_hash

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[2]
POOL = "mtabench_duckdb"  # 1 slot: every task that opens the DuckDB file runs alone
# every mtabench DAG's task defaults: a task that failed for a passing reason retries, backing off
DEFAULT_ARGS = {
    "owner": "mtabench",
    "retries": 2,
    "retry_delay": timedelta(seconds=20),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=5),
}
DEFAULT_SCHEDULE = "*/15 * * * *"
VALIDATION_FAILED = 3
USAGE_ERROR = 2
BUILD_FAILED = 4
OFF = ("", "none", "null", "off", "0", "false", "no")


@dataclass(frozen=True)
class Settings:
    """Where things live, from the environment with defaults beside the repo."""

    repo: Path
    inbox: Path
    data: Path
    venv_bin: Path
    db: Path
    serving: Path
    schedule: str | None
    watch: bool = True  # the inbox watcher starts a DAG run when a run is dropped in whole
    settle_s: float = 3.0  # a run unchanged this long is whole (ingest/settled.py)
    spark_schedule: str | None = None  # mtabench_spark: by hand or the API unless a cron is set

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Settings:
        env = dict(os.environ if env is None else env)
        repo = Path(env.get("MTABENCH_REPO") or REPO).resolve()
        data = Path(env.get("MTABENCH_DATA") or repo / "data").resolve()
        schedule = env.get("MTABENCH_INBOX_SCHEDULE", DEFAULT_SCHEDULE).strip()
        spark_schedule = env.get("MTABENCH_SPARK_SCHEDULE", "none").strip()
        return cls(
            repo=repo,
            inbox=Path(env.get("MTABENCH_INBOX") or data / "inbox").resolve(),
            data=data,
            venv_bin=Path(env.get("MTABENCH_VENV_BIN") or repo / ".venv" / "bin"),
            db=Path(env.get("MTABENCH_DB") or data / "mtabench.duckdb").resolve(),
            serving=Path(env.get("MTABENCH_SERVING_DB") or data / "serving" / "mtabench.duckdb").resolve(),
            schedule=None if schedule.lower() in OFF else schedule,
            watch=env.get("MTABENCH_INBOX_WATCH", "on").strip().lower() not in OFF,
            settle_s=settle_from_env(env),
            spark_schedule=None if spark_schedule.lower() in OFF else spark_schedule,
        )

    @property
    def dbt_executable(self) -> Path:
        return self.venv_bin / "dbt"

    @property
    def dbt_project(self) -> Path:
        return self.repo / "dbt_project"

    @property
    def profiles_yml(self) -> Path:
        return self.dbt_project / "profiles.yml"

    def dbt_env(self) -> dict[str, str]:
        """Environment for dbt (Cosmos renders and runs it in a temporary copy of the project)."""
        return {
            "MTABENCH_DB": str(self.db),
            "MTABENCH_TARGET": "duckdb",
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "PYTHONDONTWRITEBYTECODE": "",  # empty is off: dbt's modules compile once (see cli_env)
            # the same fingerprint of macros and vars as the CLI's builds (mtabench/pipeline/dbt_code.py)
            CODE_HASH_ENV: os.environ.get(CODE_HASH_ENV) or code_hash(self.dbt_project),
        }

    def cli_env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            MTABENCH_DATA=str(self.data),
            MTABENCH_DB=str(self.db),
            MTABENCH_SERVING_DB=str(self.serving),
            GX_ANALYTICS_ENABLED="false",
            TQDM_DISABLE="1",  # GX progress bars would fill the task logs
            DBT_SEND_ANONYMOUS_USAGE_STATS="false",
        )
        # the Airflow venv's interpreter settings must not leak into the data venv; and the
        # data venv may cache its bytecode: a DAG run starts ~25 CLI processes, and without
        # .pyc files each one compiles pandas, duckdb & co again (~1.5-5 s per process)
        for k in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE"):
            env.pop(k, None)
        # the data venv first on PATH: Spark starts its Python workers as `python` (unless
        # PYSPARK_PYTHON says otherwise), which must be the data venv's, not Airflow's.
        # Everything else passes through: MTABENCH_SPARK_* (master, storage, executors),
        # MTABENCH_S3_ENDPOINT and AWS_* reach the Spark build as the worker has them
        env["PATH"] = os.pathsep.join(
            [str(self.venv_bin), *filter(None, env.get("PATH", "").split(os.pathsep))]
        )
        return env


class CliFailed(Exception):
    """A transient or unexpected failure of the CLI: Airflow retries it."""


def _fail_fast(msg: str) -> Exception:
    from airflow.sdk.exceptions import AirflowFailException

    return AirflowFailException(msg)


def run_cli(settings: Settings, *args: str) -> str:
    """Run `mtabench ARGS` from the data venv; return stdout, or raise per the exit status."""
    cmd = [str(settings.venv_bin / "mtabench"), *args]
    log.info("running %s", " ".join(cmd))
    proc = subprocess.run(
        cmd, env=settings.cli_env(), cwd=settings.repo, capture_output=True, text=True, check=False
    )
    for line in proc.stdout.splitlines():
        log.info("%s", line)
    for line in proc.stderr.splitlines():
        log.warning("%s", line)
    what = "mtabench " + " ".join(args)
    if proc.returncode == VALIDATION_FAILED:
        report = (
            proc.stderr[proc.stderr.find("VALIDATION FAILED") :] if "VALIDATION FAILED" in proc.stderr else ""
        )
        raise _fail_fast(f"{what}: {report.strip() or 'validation failed'}")
    if proc.returncode == USAGE_ERROR:
        raise _fail_fast(f"{what}: usage error (exit 2): {proc.stderr.strip()}")
    tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-20:])
    if proc.returncode == BUILD_FAILED:
        raise _fail_fast(f"{what}: build failed (exit 4), nothing published:\n{tail}")
    if proc.returncode != 0:
        raise CliFailed(f"{what} exited {proc.returncode}:\n{tail}")
    return proc.stdout


# ---- tasks -------------------------------------------------------------------------------


def unpublished(settings: Settings) -> bool:
    """Landing newer than the serving copy: an earlier run ingested but did not publish
    (e.g. a failed expectation), so build, validate and publish again."""
    if not settings.db.exists():
        return False
    return not settings.serving.exists() or settings.db.stat().st_mtime > settings.serving.stat().st_mtime


def ingest_new(settings: Settings, parquet: bool = False) -> dict[str, dict]:
    """Scan the inbox and ingest its new, changed and newly broken runs, in one CLI process;
    `parquet`: also write the Parquet landing the Spark build reads (`ingest --parquet`).

    One process for the scan and every run: each process pays the data venv's imports (~0.5-2
    s), and each Airflow task ~0.2 s of bookkeeping. Each run still shows on its own: a log line
    per scanned run, a line per ingested run, and the returned XCom maps every ingested run key
    to its outcome. Nothing new: the landing DB is only read, and the result is empty."""
    settings.inbox.mkdir(parents=True, exist_ok=True)
    settle = f"{settings.settle_s:g}"  # a run still being copied in waits (ingest/settled.py)
    args = ["ingest", str(settings.inbox), "--new", "--settle", settle, "--json"]
    out = run_cli(settings, *args, *(["--parquet"] if parquet else []))
    scans, outcomes = [], {}
    for line in out.splitlines():
        if line.startswith("{"):
            o = json.loads(line)
            if "scan" in o:
                scans.append(o)
            else:
                outcomes[o.pop("run_key")] = o
    for s in scans:
        log.info("%-9s %s%s", s["scan"], s["run_key"], f"  ({s['message']})" if s.get("message") else "")
    todo = [s["run_key"] for s in scans if s["to_ingest"]]
    log.info("%d of %d run(s) to ingest from %s", len(todo), len(scans), settings.inbox)
    for key in todo:
        o = outcomes.get(key)
        if o is None:  # scanned but gone by now (moved out of the inbox meanwhile)
            log.warning("%s: not in the inbox any more, nothing ingested", key)
            continue
        log.info(
            "%s: run_id %s, %d files, %d (re)loaded, %d errors",
            *(key, o["run_id"], o["files"], o["loaded"], len(o["errors"])),
        )
        for msg in o["errors"] + o["warnings"]:
            log.warning("%s: ! %s", key, msg)
    return outcomes


def validate(settings: Settings, suite: str | None = None) -> dict[str, str]:
    """Run one expectation suite, or every suite (landing and marts) in one process. A run
    failing its own checks is held back, as `mtabench run` does (mtabench/pipeline/hold_back.py), so
    the others still publish; returns folder run id -> why it was held back."""
    out = run_cli(settings, "validate", "--hold-back", *(("--suite", suite) if suite else ()))
    held = next((json.loads(ln)["held"] for ln in out.splitlines() if ln.startswith('{"held"')), {})
    for run_id, reason in sorted(held.items()):
        log.warning("%s: %s; not published", run_id, reason)
    return held


def publish(settings: Settings, held: dict[str, str] | None = None) -> str:
    """Publish the serving file; held runs are published as their status only."""
    run_cli(settings, "publish", *(("--held", json.dumps(held)) if held else ()))
    return str(settings.serving)


def build_on_spark(settings: Settings) -> str:
    """dbt build on Spark over the Parquet landing, both suites, and the publish, in one CLI
    process (`mtabench run --engine spark --no-ingest`): the landing as the ingest task left it.
    A failed check or build fails at once and the serving file stays the last good one."""
    run_cli(settings, "run", str(settings.inbox), "--engine", "spark", "--no-ingest")
    return str(settings.serving)


def problems(outcomes: dict[str, dict] | None, held: dict[str, str] | None) -> list[str]:
    """What this DAG run could not publish whole: each input that failed to load (a corrupt
    bundle, an unreadable file) and each run held back."""
    out = [err for _, o in sorted((outcomes or {}).items()) for err in o.get("errors", [])]  # "path: why"
    out += [f"{run_id}: {reason}; not published" for run_id, reason in sorted((held or {}).items())]
    return out


def fail_on_problems(outcomes: dict[str, dict] | None, held: dict[str, str] | None) -> None:
    """After the rest published: fail, naming each problem, so the DAG run shows red."""
    found = problems(outcomes, held)
    for p in found:
        log.error("%s", p)
    if found:
        raise _fail_fast(f"{len(found)} problem(s); the rest was published:\n" + "\n".join(found))


def serving_report(settings: Settings) -> dict:
    """Read the serving file (read-only, through the data venv's duckdb) and summarise it."""
    code = (
        "import duckdb, json, sys\n"
        "with duckdb.connect(sys.argv[1], read_only=True) as con:\n"
        "    n = con.execute('select count(*) from main.runs').fetchone()[0]\n"
        '    s = con.execute("select status, count(*) from main.runs group by all order by 1").fetchall()\n'
        "print(json.dumps({'runs': n, 'by_status': dict(s)}))\n"
    )
    proc = subprocess.run(
        [str(settings.venv_bin / "python"), "-c", code, str(settings.serving)],
        env=settings.cli_env(),
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise CliFailed(f"reading {settings.serving} failed:\n{proc.stderr.strip()}")
    report = json.loads(proc.stdout)
    log.info("serving file %s: %d runs %s", settings.serving, report["runs"], report["by_status"])
    return report


# ---- assets ------------------------------------------------------------------------------
# Named by their file URI, so two set-ups with different data folders never collide in one
# Airflow metadata DB, and a downstream DAG built from the same environment matches.


def landing_asset(settings: Settings):
    from airflow.sdk import Asset

    return Asset(uri=settings.db.as_uri(), group="mtabench", extra={"role": "landing", "format": "duckdb"})


def inbox_asset(settings: Settings):
    """The inbox, watched (mtabench/airflow/inbox_watch.py): an event each time a run dropped
    into it is whole, or one is taken out, schedules mtabench_inbox at once."""
    from airflow.sdk import Asset, AssetWatcher

    from mtabench.airflow.inbox_watch import InboxTrigger

    trigger = InboxTrigger(inbox=str(settings.inbox), settle_s=settings.settle_s)
    return Asset(
        uri=settings.inbox.as_uri(),
        group="mtabench",
        extra={"role": "inbox"},
        watchers=[AssetWatcher(name="mtabench_inbox_watcher", trigger=trigger)],
    )


def serving_asset(settings: Settings):
    from airflow.sdk import Asset

    return Asset(
        uri=settings.serving.as_uri(), group="mtabench", extra={"role": "serving", "format": "duckdb"}
    )
