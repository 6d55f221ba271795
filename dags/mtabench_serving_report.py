"""mtabench_serving_report: a data-aware example, scheduled on the serving file's Asset.

Each time mtabench_inbox publishes a new serving file, this DAG runs and logs how many
runs the published marts hold (read-only, through the data venv's duckdb).
"""

from __future__ import annotations

import os
import sys
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(os.environ.get("MTABENCH_REPO") or Path(__file__).resolve().parents[1])
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from airflow.sdk import dag, task  # noqa: E402

from mtabench.airflow import tasks as at  # noqa: E402

S = at.Settings.from_env()


@dag(
    dag_id="mtabench_serving_report",
    schedule=[at.serving_asset(S)],
    start_date=datetime(2026, 1, 1, tzinfo=UTC),
    catchup=False,
    is_paused_upon_creation=False,
    max_active_runs=1,
    default_args={"owner": "mtabench", "retries": 1},
    tags=["mtabench"],
    doc_md=__doc__,
)
def mtabench_serving_report():
    @task
    def count_runs() -> dict:
        return at.serving_report(S)

    count_runs()


mtabench_serving_report()
