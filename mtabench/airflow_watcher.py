"""Wiring of the Cosmos WATCHER task group of the `mtabench_inbox` DAG (Airflow venv only).

In `ExecutionMode.WATCHER`, Cosmos runs one `dbt build` in a producer task and renders one
sensor per model that reads the producer's per-node results from XCom. Changes here:

1. The sensors run after the producer, not beside it:
   - `airflow dags test` runs tasks one at a time in one process: a sensor started before the
     producer would wait for it forever;
   - a sensor started beside the build holds a worker slot on a 2-core machine for the whole
     build; after it, each sensor finds its node's result at its first poke and ends at once.
   The root sensors' only upstream is the producer, with trigger rule ONE_DONE: they run when
   the build succeeded or failed (a failed build still shows which model or test failed, as its
   sensor fails) and are skipped when the build did not run (upstream failed, or nothing to do).

2. One sensor per model answers for the model and its tests (`dbt.<model>_run`), instead of
   Cosmos's two (`dbt.<model>.run` and `dbt.<model>.test`, TestBehavior.AFTER_EACH): every task
   costs ~0.1-0.2 s of Airflow bookkeeping even when its first poke decides, and half of ~86
   sensors were test sensors. The group is rendered with TestBehavior.NONE (one sensor per
   model); the producer still builds the tests (Cosmos would exclude them with
   `--resource-type` flags, removed here) and still aggregates them per model into XCom
   (`<model>_tests_status`), which `ModelAndTestsSensor` reads after the model's own status.

3. Less bookkeeping per task: a sensor makes three XCom reads, not Cosmos's six, and stores
   its rendered fields once, not twice (`ModelAndTestsSensor`); the producer skips the
   OpenLineage parse nothing reads (`BuildProducer`); the DAG turns off Cosmos's incremental
   XCom backup to a Variable.

A sensor ends on its first poke and never retries on its own (a failed node fails again); when
cleared in the UI it reruns its node alone (Cosmos's fallback), here `dbt build --select
<model>`: the model and its tests. The producer runs in the DuckDB pool; the sensors only read
XCom.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk.exceptions import AirflowException, AirflowSkipException
from cosmos.operators._watcher.aggregation import get_tests_status_xcom_key
from cosmos.operators._watcher.state import (
    get_compiled_sql_xcom_key,
    get_xcom_val,
    is_dbt_node_status_skipped,
    is_dbt_node_status_success,
)
from cosmos.operators.watcher import DbtProducerWatcherOperator, DbtRunWatcherOperator

SENSOR_TIMEOUT_S = 300  # the build has ended when a sensor starts: its first poke decides


class ModelAndTestsSensor(DbtRunWatcherOperator):
    """Cosmos's model sensor, failing also when one of the model's tests failed in the build.

    A first try reads what it needs and no more: the model's compiled SQL (a rendered field,
    stored once at the start), its status and its tests' aggregated status, three XCom reads.
    Cosmos's poke also reads the producer's state, its start-up events and the node's dbt event,
    and stores the rendered fields a second time: each an Execution API call (~5-40 ms in
    process, more under load) for every one of ~45 sensors. Cosmos's poke still decides when the
    producer reported nothing for the model, and on a cleared sensor."""

    base_cmd = ["build"]  # a cleared sensor's fallback: `dbt build --select <model>` (and its tests)
    test_ids: tuple[str, ...] = ()  # the model's dbt tests (unique ids), from the producer

    def render_template_fields(self, context: Any, jinja_env: Any = None) -> None:
        """The model's compiled SQL, from the ended build, in the rendered fields Airflow stores
        at the task's start (Cosmos sets it during the poke, which stores them all once more)."""
        super().render_template_fields(context, jinja_env)  # compiled SQL is not a Jinja template
        ti = context.get("ti")
        if ti is not None and ti.try_number == 1:
            key = get_compiled_sql_xcom_key(self.model_unique_id)
            self.compiled_sql = get_xcom_val(ti, self.producer_task_id, key) or self.compiled_sql

    def poke(self, context: Any) -> bool:
        ti = context["ti"]
        if ti.try_number > 1:  # cleared in the UI: Cosmos's fallback, `dbt build`
            return super().poke(context)
        status = self._get_node_status(ti, context)
        if status is None:  # no result for the model: Cosmos asks the producer's state
            return super().poke(context)
        what = f"Model '{self.model_unique_id}'"
        if is_dbt_node_status_skipped(status):
            raise AirflowSkipException(f"{what} was skipped by the dbt command.")
        if not is_dbt_node_status_success(status):
            raise AirflowException(
                f"{what} finished with status '{status}' (see the log of {self.producer_task_id})"
            )
        self.log.info("%s built: %s", what, status)
        if not self.test_ids:
            return True
        key = get_tests_status_xcom_key(self.model_unique_id)
        status = get_xcom_val(ti, self.producer_task_id, key)
        names = ", ".join(t.split(".")[2] for t in self.test_ids)
        if is_dbt_node_status_success(status):
            self.log.info("%d test(s) of %s passed: %s", len(self.test_ids), self.model_unique_id, names)
            return True
        raise AirflowException(
            f"Tests for model '{self.model_unique_id}' finished with status '{status}' (its tests: {names};"
            f" the failed one is named in the log of {self.producer_task_id})"
        )


class BuildProducer(DbtProducerWatcherOperator):
    """Cosmos's producer, without the OpenLineage parse of dbt's artifacts after the build: with
    `emit_datasets=False` nothing reads its events, and it re-reads manifest.json and
    run_results.json of ~300 nodes (~0.5 s) between dbt's exit and the end of the task."""

    def calculate_openlineage_events_completes(self, *args: Any, **kwargs: Any) -> bool:
        if self.emit_datasets:
            return super().calculate_openlineage_events_completes(*args, **kwargs)
        return False


def _tasks(group: Any) -> list[Any]:
    out = []
    for child in group.children.values():
        out.extend(_tasks(child) if hasattr(child, "children") else [child])
    return out


def _without_resource_type_flags(flags: list[str]) -> list[str]:
    out, skip = [], False
    for flag in flags:
        if skip:
            skip = False
        elif flag == "--resource-type":
            skip = True
        else:
            out.append(flag)
    return out


def watch_after_build(group: Any) -> None:
    """Run the group's sensors after its producer, one per model for the model and its tests
    (call before wiring the group's upstream; the group is rendered with TestBehavior.NONE)."""
    from airflow.sdk import TriggerRule
    from cosmos.constants import PRODUCER_WATCHER_TASK_ID

    tasks = _tasks(group)
    (producer,) = [t for t in tasks if t.task_id.endswith(PRODUCER_WATCHER_TASK_ID)]
    producer.dbt_cmd_flags = _without_resource_type_flags(producer.dbt_cmd_flags)  # build tests too
    if type(producer) is DbtProducerWatcherOperator:
        producer.__class__ = BuildProducer  # same constructor, no OpenLineage parse when unused
    sensors = [t for t in tasks if hasattr(t, "producer_task_id")]
    in_group = {t.task_id for t in tasks}
    for sensor in sensors:
        if type(sensor) is DbtRunWatcherOperator:
            sensor.__class__ = ModelAndTestsSensor  # same constructor, a poke that checks tests too
            sensor.test_ids = tuple(producer.tests_per_model.get(sensor.model_unique_id, ()))
        sensor.deferrable = False
        sensor.mode = "poke"
        sensor.poke_interval = 1.0
        sensor.timeout = float(SENSOR_TIMEOUT_S)
        sensor.retries = 0
        if not sensor.upstream_task_ids & in_group:  # a root of the dbt graph
            producer >> sensor
            sensor.trigger_rule = TriggerRule.ONE_DONE
