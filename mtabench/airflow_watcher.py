"""Wiring of the Cosmos WATCHER task group of the `mtabench_inbox` DAG (Airflow venv only).

In `ExecutionMode.WATCHER`, Cosmos runs one `dbt build` in a producer task and renders one
sensor per model (and per model's tests) that reads the producer's per-node results from XCom.
In a DbtTaskGroup, Cosmos starts those sensors beside the producer, to follow the build live.
Here they run after it instead:

- `airflow dags test` runs tasks one at a time in one process: a sensor started before the
  producer would wait for it forever;
- a sensor started beside the build holds a worker slot on a 2-core machine for the whole build;
  after it, each sensor finds its node's result at its first poke and ends at once.

The root sensors' only upstream is the producer, with trigger rule ONE_DONE: they run when the
build succeeded or failed (a failed build still shows which model or test failed, as its
sensor fails) and are skipped when the build did not run (upstream failed, or nothing to do).
A sensor ends on its first poke and never retries on its own (a failed node fails again); when
cleared in the UI it reruns its node alone (Cosmos's fallback). The producer runs in the DuckDB
pool; the sensors only read XCom.
"""

from __future__ import annotations

from typing import Any

SENSOR_TIMEOUT_S = 300  # the build has ended when a sensor starts: its first poke decides


def _tasks(group: Any) -> list[Any]:
    out = []
    for child in group.children.values():
        out.extend(_tasks(child) if hasattr(child, "children") else [child])
    return out


def watch_after_build(group: Any) -> None:
    """Run the group's sensors after its producer (call before wiring the group's upstream)."""
    from airflow.sdk import TriggerRule
    from cosmos.constants import PRODUCER_WATCHER_TASK_ID

    tasks = _tasks(group)
    (producer,) = [t for t in tasks if t.task_id.endswith(PRODUCER_WATCHER_TASK_ID)]
    sensors = [t for t in tasks if hasattr(t, "producer_task_id")]
    in_group = {t.task_id for t in tasks}
    for sensor in sensors:
        sensor.deferrable = False
        sensor.mode = "poke"
        sensor.poke_interval = 1.0
        sensor.timeout = float(SENSOR_TIMEOUT_S)
        sensor.retries = 0
        if not sensor.upstream_task_ids & in_group:  # a root of the dbt graph
            producer >> sensor
            sensor.trigger_rule = TriggerRule.ONE_DONE
