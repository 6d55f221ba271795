"""mtabench_spark: the inbox of mtabench_inbox, with its marts built on Spark.

    ingest (mtabench_inbox's ingest, also writing the Parquet landing: `mtabench ingest --new
            --parquet`; a run landed earlier without it has its maillogs staged now)
         ─▶ build_on_spark (`mtabench run --engine spark --no-ingest`: dbt build on Spark over
                            the Parquet landing, the landing and marts suites, then the publish)
         ─▶ problems (fails, naming it, if an input could not be read: the rest is served)

When it runs: by hand or through the API (`airflow dags trigger mtabench_spark`), unless
MTABENCH_SPARK_SCHEDULE holds a cron expression (default "none"). One active run at a time.

Spark's settings come from the worker's environment and pass to the CLI as they are:
MTABENCH_SPARK_MASTER (default local[*]), MTABENCH_SPARK_STORAGE, MTABENCH_SPARK_DRIVER_MEMORY and
the other MTABENCH_SPARK_* variables, MTABENCH_S3_ENDPOINT, AWS_*. Paths as mtabench_inbox's:
MTABENCH_INBOX, MTABENCH_DATA, MTABENCH_DB, MTABENCH_SERVING_DB, MTABENCH_VENV_BIN.

`ingest` and `build_on_spark` open the DuckDB landing, so both run in the 1-slot pool
`mtabench_duckdb`, shared with mtabench_inbox: the two DAGs never write at once. A failed dbt
model or test, or a failed expectation, fails `build_on_spark` at once, without retry, with the
CLI's report; nothing is published and the serving file stays the last good one. Nothing new in
the inbox and the landing published (by either DAG): `ingest` is skipped, and so is the rest.
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(os.environ.get("MTABENCH_REPO") or Path(__file__).resolve().parents[1])
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from airflow.sdk import dag, task  # noqa: E402
from airflow.sdk.exceptions import AirflowSkipException  # noqa: E402

from mtabench.airflow import tasks as at  # noqa: E402
from mtabench.airflow.dags_test import serve_latest_api_version_only  # noqa: E402

serve_latest_api_version_only()  # `airflow dags test` only: ~3 s less per DAG run (see module)

S = at.Settings.from_env()


@dag(
    dag_id="mtabench_spark",
    schedule=S.spark_schedule,
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    is_paused_upon_creation=False,  # a trigger from the UI or the API runs at once
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=3),
    default_args=at.DEFAULT_ARGS,
    tags=["mtabench", "spark"],
    doc_md=__doc__,
)
def mtabench_spark():
    @task(pool=at.POOL, outlets=[at.landing_asset(S)], multiple_outputs=True)  # an XCom entry per run key
    def ingest() -> dict[str, dict]:
        outcomes = at.ingest_new(S, parquet=True)
        if not outcomes and not at.unpublished(S):
            raise AirflowSkipException("nothing new in the inbox, and the landing is published")
        return outcomes

    @task(pool=at.POOL, outlets=[at.serving_asset(S)], execution_timeout=timedelta(hours=2))
    def build_on_spark() -> str:
        return at.build_on_spark(S)

    @task(retries=0)
    def problems(outcomes: dict[str, dict]) -> None:
        # after the publish: an unreadable input fails this task, the rest is already served
        at.fail_on_problems(outcomes, None)

    ingested = ingest()
    ingested >> build_on_spark() >> problems(ingested)


mtabench_spark()
