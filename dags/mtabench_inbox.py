"""mtabench_inbox: ingestion of an archive inbox as runs are dropped into it, publishing a serving file.

    ingest (scan the inbox, then every new/changed run, in one process; per run: a log line
            and an XCom entry)
         ─▶ dbt (Cosmos WATCHER: one `dbt build` in dbt_producer_watcher ─▶ one sensor per
                 model `<model>_run` (fails if the model or one of its tests failed) and per
                 seed `<seed>_seed`, each decided in the triggerer under the scheduler)
         dbt_producer_watcher ─▶ validate (GX: landing and marts suites; a run failing its own
                                           checks is held back, the others pass)
                              ─▶ publish (atomic replace of the serving file; held runs as
                                          their status only)
                              ─▶ problems (fails, naming them, if an input could not be read
                                           or a run was held back: the rest is served)

When it runs: the DAG starts unpaused. An inbox watcher (mtabench/airflow/inbox_watch.py: an
AssetWatcher on the inbox Asset, polled in the triggerer) schedules a run as soon as a run
dropped into the inbox is whole (a folder unchanged for MTABENCH_INBOX_SETTLE_S seconds, a
bundle that also reads to the end: ingest/settled.py) or one is taken out; the cron schedule
(MTABENCH_INBOX_SCHEDULE, default every 15 minutes) stays as a fallback. A run still being
copied in is never ingested: the ingest skips it until it is whole.

The order is the CLI's (`mtabench run`): ingest, build, validate, publish; one dbt process and one
GX process per DAG run, so a DAG run costs about what the CLI costs (bench/airflow_bench.py).

Paths come from the environment (defaults beside the repo): MTABENCH_INBOX (data/inbox),
MTABENCH_DATA (data/), MTABENCH_DB, MTABENCH_SERVING_DB, MTABENCH_REPO, MTABENCH_VENV_BIN
(the data venv's bin/, .venv/bin), MTABENCH_INBOX_SCHEDULE (cron, or "none"),
MTABENCH_INBOX_WATCH ("off": no watcher) and MTABENCH_INBOX_SETTLE_S (3).

Every task that opens the DuckDB file runs in the 1-slot pool `mtabench_duckdb`, so no two
ever overlap (the dbt sensors only read XCom). A check failed by one run's own rows holds that
run back (mtabench/pipeline/hold_back.py) and the others publish; a check across runs fails validate at
once without retry, and a failed dbt model or test fails the build and its sensor at once:
publishing does not run and the last good serving file stays; the landing stays unpublished,
so the next DAG run builds and validates again. A corrupt bundle is recorded by ingest
(raw.files status 'error' + message), the rest still publishes and `problems` fails naming
it. A run taken out of the inbox leaves the landing and the serving file; runs another archive
landed in the same landing (`make run` on samples/) stay. Nothing new in the inbox and nothing
unpublished: `ingest` only reads the landing DB and is skipped, and so is the rest.
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

from mtabench.airflow import tasks as at  # noqa: E402
from mtabench.airflow.dags_test import serve_latest_api_version_only  # noqa: E402
from mtabench.airflow.watcher import watch_after_build  # noqa: E402

serve_latest_api_version_only()  # `airflow dags test` only: ~3 s less per DAG run (see module)

S = at.Settings.from_env()
LANDING = at.landing_asset(S)
SERVING = at.serving_asset(S)


def schedule():
    """The watched inbox, or the cron schedule, or either, whichever comes first."""
    if not S.watch:
        return S.schedule
    if S.schedule is None:
        return [at.inbox_asset(S)]
    from airflow.sdk import AssetOrTimeSchedule, CronTriggerTimetable

    return AssetOrTimeSchedule(
        timetable=CronTriggerTimetable(S.schedule, timezone="UTC"), assets=[at.inbox_asset(S)]
    )


@dag(
    dag_id="mtabench_inbox",
    schedule=schedule(),
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    is_paused_upon_creation=False,  # a drop reaches the dashboards without a click in the UI
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=2),
    default_args=at.DEFAULT_ARGS,
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
    def validate() -> dict[str, str]:
        # both suites in one process (GX, when a check has failing rows, imported once); a run
        # failing its own checks is held back and the others publish
        return at.validate(S)

    @task(pool=at.POOL, outlets=[SERVING])
    def publish(held: dict[str, str]) -> str:
        return at.publish(S, held)

    @task(retries=0)
    def problems(outcomes: dict[str, dict], held: dict[str, str]) -> None:
        # after the publish: a corrupt bundle or a held-back run fails this task, so the DAG run
        # shows red, while every other run is already served
        at.fail_on_problems(outcomes, held)

    # One `dbt build` (the producer, in the DuckDB pool, no retry: a failed build fails fast and
    # the next DAG run rebuilds) and one sensor per model showing what that build did to the model
    # and its tests (mtabench/airflow/watcher.py).
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

    ingested = ingest()
    ingested >> dbt
    held = validate()
    producer >> held
    publish(held) >> problems(ingested, held)


mtabench_inbox()
