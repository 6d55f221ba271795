"""mtabench_inbox: scheduled, idempotent ingestion of an archive inbox, publishing a serving file.

    scan ─▶ anything_to_do ─▶ ingest[run_key] (one mapped task per new/changed run)
         ─▶ dbt (Cosmos WATCHER: one `dbt build` in dbt_producer_watcher, then one sensor
                 per model `<model>.run`/`<model>_run` and per model's tests `<model>.test`)
         ─▶ validate (GX: landing and marts suites) ─▶ publish (atomic replace of the serving file)

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
nothing unpublished: the run stops after `anything_to_do`.
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

from airflow.sdk import TriggerRule, dag, get_current_context, task  # noqa: E402
from cosmos import DbtTaskGroup, ExecutionConfig, ProfileConfig, ProjectConfig, RenderConfig  # noqa: E402
from cosmos.constants import ExecutionMode, InvocationMode, LoadMode, TestBehavior  # noqa: E402

from mtabench import airflow_tasks as at  # noqa: E402
from mtabench.airflow_watcher import watch_after_build  # noqa: E402

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
    @task(pool=at.POOL)
    def scan() -> list[str]:
        return at.scan(S)

    @task.short_circuit
    def anything_to_do(run_keys: list[str]) -> bool:
        return at.anything_to_do(S, run_keys)

    @task(
        pool=at.POOL,
        max_active_tis_per_dag=1,
        outlets=[LANDING],
        map_index_template="{{ run_key }}",
    )
    def ingest(run_key: str) -> str:
        get_current_context()["run_key"] = run_key  # type: ignore[literal-required]
        return at.ingest_run(S, run_key)

    @task(pool=at.POOL)
    def validate() -> None:
        at.validate(S)  # both suites in one process: one GX import (~7 s)

    @task(pool=at.POOL, outlets=[SERVING])
    def publish() -> str:
        return at.publish(S)

    # One `dbt build` (the producer, in the DuckDB pool, no retry: a failed build fails fast and
    # the next DAG run rebuilds) and one sensor per model and per model's tests showing what that
    # build did. The producer runs when the inbox had nothing new but the landing is unpublished
    # (ingest skipped).
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
                "trigger_rule": TriggerRule.NONE_FAILED,
            },
        ),
        render_config=RenderConfig(
            load_method=LoadMode.DBT_LS,
            invocation_mode=InvocationMode.SUBPROCESS,
            dbt_executable_path=S.dbt_executable,
            test_behavior=TestBehavior.AFTER_EACH,
            emit_datasets=False,  # the DAG declares its own assets
        ),
        operator_args={"install_deps": False},
    )
    watch_after_build(dbt)  # before wiring the group: the producer stays its only root

    run_keys = scan()
    gate = anything_to_do(run_keys)
    loaded = ingest.expand(run_key=run_keys)
    gate >> loaded
    loaded >> dbt >> validate() >> publish()


mtabench_inbox()
