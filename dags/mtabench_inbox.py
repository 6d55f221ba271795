"""mtabench_inbox: scheduled, idempotent ingestion of an archive inbox, publishing a serving file.

    ingest (scan the inbox, then every new/changed run, in one process; per run: a log line
            and an XCom entry)
         ─▶ dbt (Cosmos WATCHER: one `dbt build` in dbt_producer_watcher ─▶ one sensor per
                 model `<model>_run` (fails if the model or one of its tests failed) and per
                 seed `<seed>_seed`, each decided in the triggerer under the scheduler)
         dbt_producer_watcher ─▶ validate (GX: landing and marts suites)
                              ─▶ publish (atomic replace of the serving file)

The order is the CLI's (`mtabench run`): ingest, build, validate, publish; one dbt process and one
GX process per DAG run, so a DAG run costs about what the CLI costs (bench/airflow_bench.py).

Paths come from the environment (defaults beside the repo): MTABENCH_INBOX (data/inbox),
MTABENCH_DATA (data/), MTABENCH_DB, MTABENCH_SERVING_DB, MTABENCH_REPO, MTABENCH_VENV_BIN
(the data venv's bin/, .venv/bin) and MTABENCH_INBOX_SCHEDULE (cron, or "none").

Every task that opens the DuckDB file runs in the 1-slot pool `mtabench_duckdb`, so no two
ever overlap (the dbt sensors only read XCom). A failed expectation (CLI exit 3) fails its task
at once without retry, and a failed dbt model or test fails the build and its sensor at once:
publishing does not run and the last good serving file stays; the landing stays unpublished,
so the next DAG run builds and validates again. A corrupt bundle is recorded by ingest
(raw.files status 'error' + message) and the rest still publishes. Nothing new in the inbox and
nothing unpublished: `ingest` only reads the landing DB and is skipped, and so is the rest.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(os.environ.get("MTABENCH_REPO") or Path(__file__).resolve().parents[1])
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("AIRFLOW__COSMOS__ENABLE_TELEMETRY", "False")
# the producer keeps its XCom backup in memory, written to a Variable only if it fails (Cosmos's
# default rewrote the whole, growing backup to a Variable at each of ~140 pushes during the build)
os.environ.setdefault("AIRFLOW__COSMOS__ENABLE_WATCHER_RELIABLE_RETRY", "False")

from airflow.sdk import dag, task  # noqa: E402
from airflow.sdk.exceptions import AirflowSkipException  # noqa: E402
from cosmos import DbtTaskGroup, ExecutionConfig, ProfileConfig, ProjectConfig, RenderConfig  # noqa: E402
from cosmos.constants import ExecutionMode, InvocationMode, LoadMode, TestBehavior  # noqa: E402

from mtabench import airflow_tasks as at  # noqa: E402
from mtabench.airflow_dags_test import serve_latest_api_version_only  # noqa: E402
from mtabench.airflow_watcher import watch_after_build  # noqa: E402

serve_latest_api_version_only()  # `airflow dags test` only: ~3 s less per DAG run (see module)

S = at.Settings.from_env()
LANDING = at.landing_asset(S)
SERVING = at.serving_asset(S)

DEFAULT_ARGS = {
    "owner": "mtabench",
    "retries": 2,
    "retry_delay": timedelta(seconds=20),
    "retry_exponential_backoff": True,
    "max_retry_delay": timedelta(minutes=5),
}


@dag(
    dag_id="mtabench_inbox",
    schedule=S.schedule,
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=2),
    default_args=DEFAULT_ARGS,
    tags=["mtabench"],
    doc_md=__doc__,
)
def mtabench_inbox():
    # scan and ingest in one task and one CLI process (each costs ~0.2 s of Airflow bookkeeping
    # and each process ~0.5-2 s of imports); nothing to do: skipped, and so is everything after
    @task(pool=at.POOL, outlets=[LANDING], multiple_outputs=True)  # an XCom entry per run key
    def ingest() -> dict[str, dict]:
        outcomes = at.ingest_new(S)  # a log line per scanned run and per ingested run
        if not outcomes and not at.unpublished(S):
            raise AirflowSkipException("nothing new in the inbox, and the landing is published")
        return outcomes  # empty: landing unpublished, nothing new: build, validate, publish again

    @task(pool=at.POOL)
    def validate() -> None:
        at.validate(S)  # both suites in one process (GX, when a check has failing rows, imported once)

    @task(pool=at.POOL, outlets=[SERVING])
    def publish() -> str:
        return at.publish(S)

    # One `dbt build` (the producer, in the DuckDB pool, no retry: a failed build fails fast and
    # the next DAG run rebuilds) and one sensor per model showing what that build did to the model
    # and its tests (mtabench/airflow_watcher.py).
    dbt = DbtTaskGroup(
        group_id="dbt",
        project_config=ProjectConfig(dbt_project_path=S.dbt_project, env_vars=S.dbt_env()),
        profile_config=ProfileConfig(
            profile_name="mtabench", target_name="duckdb", profiles_yml_filepath=S.profiles_yml
        ),
        execution_config=ExecutionConfig(
            execution_mode=ExecutionMode.WATCHER,
            invocation_mode=InvocationMode.SUBPROCESS,
            dbt_executable_path=S.dbt_executable,
            setup_operator_args={
                "pool": at.POOL,
                "retries": 0,
            },
        ),
        render_config=RenderConfig(
            load_method=LoadMode.DBT_LS,
            invocation_mode=InvocationMode.SUBPROCESS,
            dbt_executable_path=S.dbt_executable,
            test_behavior=TestBehavior.NONE,  # tests: built by the producer, shown on the model's sensor
            emit_datasets=False,  # the DAG declares its own assets
        ),
        operator_args={"install_deps": False},
    )
    # before wiring the group: the producer stays its only root; validate waits for the build
    # (which fails on a failed model or test), the sensors report beside it
    producer = watch_after_build(dbt)

    ingest() >> dbt
    producer >> validate() >> publish()


mtabench_inbox()
