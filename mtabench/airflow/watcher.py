"""Wiring of the Cosmos WATCHER task group of the `mtabench_inbox` DAG (Airflow venv only).

In `ExecutionMode.WATCHER`, Cosmos runs one `dbt build` in a producer task and renders one
sensor per model that reads the producer's per-node results from XCom. Changes here:

1. The sensors run after the producer, not beside it:
   - `airflow dags test` runs tasks one at a time in one process: a sensor started before the
     producer would wait for it forever;
   - a sensor started beside the build holds a worker slot on a 2-core machine for the whole
     build; after it, each sensor finds its node's result at its first poke and ends at once.
   Every sensor's only upstream is the producer, with trigger rule ONE_DONE: they run when the
   build succeeded or failed (a failed build still shows which model or test failed, as its
   sensor fails) and are skipped when the build did not run (upstream failed, or nothing to do).
   They all decide in one round: chained by the models' lineage they took one scheduler and
   triggerer round trip (~2-3 s) per level of the dbt graph, 11 levels (39 s of a 73 s DAG run,
   bench/airflow_bench.py --scheduler). The lineage is dbt's (`dbt docs`); a model downstream of
   a failed one shows dbt's verdict on it (skipped), the failed one fails.

2. One sensor per model answers for the model and its tests (`dbt.<model>_run`), instead of
   Cosmos's two (`dbt.<model>.run` and `dbt.<model>.test`, TestBehavior.AFTER_EACH): every task
   costs ~0.1-0.2 s of Airflow bookkeeping even when its first poke decides, and half of ~86
   sensors were test sensors. The group is rendered with TestBehavior.NONE (one sensor per
   model); the producer still builds the tests (Cosmos would exclude them with
   `--resource-type` flags, removed here) and still aggregates them per model into XCom
   (`<model>_tests_status`), which `ModelAndTestsSensor` reads after the model's own status.

3. Less bookkeeping per task: a sensor makes three XCom reads, not Cosmos's six, and stores
   its rendered fields once, not twice (`ModelAndTestsSensor`); the producer skips the
   OpenLineage parse nothing reads and holds each node's XCom until the build ends, then
   pushes them as one (`BuildProducer`); the DAG turns off Cosmos's incremental XCom backup to
   a Variable.

4. Under the scheduler a sensor needs no worker process: it starts in the triggerer
   (`start_from_trigger`), where `ModelResultTrigger` reads the ended build's result and ends
   the task (success, failed or skipped) without going back to a worker. A task process costs
   ~1 s of start-up, DAG parse and API calls, ~45 of them per DAG run on 2 cores.
   `airflow dags test` runs every task in its process, so there the sensor pokes
   (the same decision, `model_verdict`).

5. What comes after dbt (validate) waits for the producer, not for the sensors: the build fails
   when a model or a test fails (dbt's exit code), so the sensors only report, beside validate
   (~3 s of triggerer and scheduler rounds no longer on the DAG run's path). A failed sensor
   still fails the DAG run (it is a leaf), and a failed build stops validate and publish.

A sensor decides at once and never retries on its own (a failed node fails again); when cleared
in the UI (or when the build reported nothing for its model) it resumes in a worker, where
Cosmos's fallback reruns its node alone, here `dbt build --select <model>`: the model and its
tests. The producer runs in the DuckDB pool; the sensors only read XCom.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from airflow.sdk.exceptions import AirflowException, AirflowSkipException
from airflow.triggers.base import (
    BaseTrigger,
    StartTriggerArgs,
    TaskFailedEvent,
    TaskSkippedEvent,
    TaskSuccessEvent,
    TriggerEvent,
)
from asgiref.sync import sync_to_async
from cosmos.operators._watcher.aggregation import get_tests_status_xcom_key
from cosmos.operators._watcher.state import (
    get_compiled_sql_xcom_key,
    get_status_xcom_key,
    get_xcom_val,
    is_dbt_node_status_skipped,
    is_dbt_node_status_success,
)
from cosmos.operators.watcher import (
    DbtProducerWatcherOperator,
    DbtRunWatcherOperator,
    DbtSeedWatcherOperator,
)

SENSOR_TIMEOUT_S = 300  # the build has ended when a sensor starts: its first look decides

SUCCESS, SKIPPED, FAILED, UNKNOWN = "success", "skipped", "failed", "unknown"
RESULTS_KEY = "mtabench_node_results"  # BuildProducer: {Cosmos's per-node XCom key: its value}
HELD_SUFFIXES = ("_status", "_compiled_sql", "_dbt_event")  # per-node keys, held for RESULTS_KEY


def model_verdict(
    unique_id: str,
    status: str | None,
    test_ids: tuple[str, ...],
    tests_status: str | None,
    producer_task_id: str,
) -> tuple[str, str]:
    """What the ended build did to a node and its tests: (SUCCESS | SKIPPED | FAILED | UNKNOWN,
    the line to log). UNKNOWN: the build reported nothing for the node (Cosmos's poke decides)."""
    what = f"{'Seed' if unique_id.startswith('seed.') else 'Model'} '{unique_id}'"
    if status is None:
        return UNKNOWN, f"{what}: no result from {producer_task_id}"
    if is_dbt_node_status_skipped(status):
        return SKIPPED, f"{what} was skipped by the dbt command."
    if not is_dbt_node_status_success(status):
        return FAILED, f"{what} finished with status '{status}' (see the log of {producer_task_id})"
    if not test_ids:
        return SUCCESS, f"{what} built: {status}"
    names = ", ".join(t.split(".")[2] for t in test_ids)
    if is_dbt_node_status_success(tests_status):
        return SUCCESS, f"{what} built: {status}; {len(test_ids)} test(s) passed: {names}"
    return FAILED, (
        f"Tests for model '{unique_id}' finished with status '{tests_status}' (its tests: {names};"
        f" the failed one is named in the log of {producer_task_id})"
    )


def node_statuses(results: dict[str, Any], unique_id: str) -> tuple[str | None, str | None]:
    """(the node's status, its tests' aggregated status) from the build's results (RESULTS_KEY)."""
    node = results.get(get_status_xcom_key(unique_id))
    status = node.get("status") if isinstance(node, dict) else None
    return status, results.get(get_tests_status_xcom_key(unique_id))


_POKED: dict[tuple[str, str, str], dict[str, Any] | None] = {}


def build_results(ti: Any, producer_task_id: str) -> dict[str, Any] | None:
    """The build's results, read once per process and DAG run: `airflow dags test` runs all ~47
    sensors in one process (two XCom reads each otherwise)."""
    key = (ti.dag_id, ti.run_id, producer_task_id)
    if key not in _POKED:
        _POKED.clear()  # one DAG run at a time in a process
        _POKED[key] = get_xcom_val(ti, producer_task_id, RESULTS_KEY)
    return _POKED[key]


_RESULTS: dict[tuple[str, str, str], tuple[asyncio.Future, float]] = {}
_RESULTS_TTL_S = 60.0  # the sensors of one build start together; a later read reads again


class ModelResultTrigger(BaseTrigger):
    """A sensor's whole task, in the triggerer: the ended build's results (RESULTS_KEY, one read
    shared by the triggers of a DAG run), then the task ends there. A cleared sensor (try > 1),
    or a node (or a build) with no result on record, resumes in a worker (`resume_in_worker`),
    whose poke reads the node's own keys."""

    def __init__(self, model_unique_id: str, producer_task_id: str, test_ids: list[str] | None = None):
        super().__init__()
        self.model_unique_id = model_unique_id
        self.producer_task_id = producer_task_id
        self.test_ids = tuple(test_ids or ())

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{__name__}.{type(self).__name__}",
            {
                "model_unique_id": self.model_unique_id,
                "producer_task_id": self.producer_task_id,
                "test_ids": list(self.test_ids),
            },
        )

    async def _xcom(self, key: str) -> Any:
        from airflow.sdk.execution_time.xcom import XCom

        ti = self.task_instance
        return await sync_to_async(XCom.get_one)(
            run_id=ti.run_id, key=key, task_id=self.producer_task_id, dag_id=ti.dag_id, map_index=ti.map_index
        )

    async def _results(self) -> dict[str, Any] | None:
        """The build's results (RESULTS_KEY), read once per DAG run by all the sensors' triggers
        in this triggerer process (they run in one event loop)."""
        ti = self.task_instance
        key = (ti.dag_id, ti.run_id, self.producer_task_id)
        loop = asyncio.get_running_loop()
        now = loop.time()
        for stale in [k for k, (_, at) in _RESULTS.items() if now - at > _RESULTS_TTL_S]:
            del _RESULTS[stale]
        if key not in _RESULTS:
            _RESULTS[key] = (asyncio.ensure_future(self._xcom(RESULTS_KEY)), now)
        try:
            return await asyncio.shield(_RESULTS[key][0])
        except Exception:  # noqa: BLE001 - a failed read: the worker's poke decides
            _RESULTS.pop(key, None)
            return None

    async def run(self) -> AsyncIterator[TriggerEvent]:
        if self.task_instance.try_number > 1:  # cleared in the UI: Cosmos's fallback, in a worker
            yield TriggerEvent({"resume": "cleared"})
            return
        results = await self._results()  # none: no verdict here, the worker's poke reads the keys
        status, tests = node_statuses(results, self.model_unique_id) if results is not None else (None, None)
        verdict, line = model_verdict(
            self.model_unique_id, status, self.test_ids, tests, self.producer_task_id
        )
        if verdict == FAILED:
            self.log.error(line)
        else:
            self.log.info(line)
        event = {SUCCESS: TaskSuccessEvent, SKIPPED: TaskSkippedEvent, FAILED: TaskFailedEvent}.get(verdict)
        yield event() if event else TriggerEvent({"resume": line})


class DecidedInTriggerer:
    """Mixin of the group's sensors: where the trigger could not decide, the worker pokes."""

    def resume_in_worker(self, context: Any, event: Any = None) -> Any:
        self.log.info("Deciding in the worker (%s)", event)
        return self.execute(context)


def raise_unless_success(verdict: str, line: str) -> None:
    """A sensor's decided verdict as Airflow takes it: a skipped or failed node raises (the task
    ends skipped or failed, `line` its reason); a success returns."""
    if verdict == SKIPPED:
        raise AirflowSkipException(line)
    if verdict == FAILED:
        raise AirflowException(line)


class ModelAndTestsSensor(DecidedInTriggerer, DbtRunWatcherOperator):
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
            results = build_results(ti, self.producer_task_id) or {}
            self.compiled_sql = results.get(key) or self.compiled_sql

    def poke(self, context: Any) -> bool:
        ti = context["ti"]
        if ti.try_number > 1:  # cleared in the UI: Cosmos's fallback, `dbt build`
            return super().poke(context)
        results = build_results(ti, self.producer_task_id)
        if results is not None:
            status, tests = node_statuses(results, self.model_unique_id)
        else:
            status, tests = self._get_node_status(ti, context), None
            if self.test_ids and is_dbt_node_status_success(status):
                key = get_tests_status_xcom_key(self.model_unique_id)
                tests = get_xcom_val(ti, self.producer_task_id, key)
        verdict, line = model_verdict(
            self.model_unique_id, status, self.test_ids, tests, self.producer_task_id
        )
        if verdict == UNKNOWN:  # no result for the model: Cosmos asks the producer's state
            return super().poke(context)
        raise_unless_success(verdict, line)
        self.log.info(line)
        return True


class SeedSensor(DecidedInTriggerer, DbtSeedWatcherOperator):
    """Cosmos's seed sensor, decided in the triggerer under the scheduler; in a worker (`airflow
    dags test`) its first poke reads the build's results (RESULTS_KEY), as a model's does."""

    def poke(self, context: Any) -> bool:
        ti = context["ti"]
        if ti.try_number > 1:  # cleared in the UI: Cosmos's fallback
            return super().poke(context)
        results = build_results(ti, self.producer_task_id)
        status = node_statuses(results, self.model_unique_id)[0] if results is not None else None
        verdict, line = model_verdict(self.model_unique_id, status, (), None, self.producer_task_id)
        if verdict == UNKNOWN:  # no result for the seed: Cosmos asks the producer's state
            return super().poke(context)
        raise_unless_success(verdict, line)
        self.log.info(line)
        return True


class _HeldPushes:
    """The producer's task instance as Cosmos's dbt log parser sees it: a node's XCom (its status,
    its tests' status, its compiled SQL) is kept in Cosmos's record of its pushes, not sent; every
    other call goes to the task instance."""

    def __init__(self, ti: Any):
        object.__setattr__(self, "_ti", ti)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ti, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._ti, name, value)

    def xcom_push(self, key: str, value: Any) -> None:
        if not key.endswith(HELD_SUFFIXES) or key == "task_status":
            self._ti.xcom_push(key=key, value=value)
        # held: Cosmos's safe_xcom_push records it in _cosmos_xcom_backup_buffer right after


class BuildProducer(DbtProducerWatcherOperator):
    """Cosmos's producer, without the OpenLineage parse of dbt's artifacts after the build: with
    `emit_datasets=False` nothing reads its events, and it re-reads manifest.json and
    run_results.json of ~300 nodes (~0.5 s) between dbt's exit and the end of the task.

    Cosmos pushes each node's status, its tests' status and its compiled SQL as an XCom the
    moment dbt reports it, reading dbt's output in between: ~150 Execution API calls (~45 ms
    each on 2 busy cores) that held dbt up mid-build (its output pipe full) and took the cores
    from it. Here they are held during the build, and when it ends (passed or failed) pushed as
    one XCom (RESULTS_KEY), from Cosmos's own record of its pushes: the sensors' triggers read
    that one value between them, a sensor in a worker its model's compiled SQL from it. The
    sensors run after the build (see watch_after_build), so none looks for a node's key sooner.
    """

    def _make_parse_callable(self) -> Any:
        parse = super()._make_parse_callable()
        held: dict[int, tuple[Any, _HeldPushes]] = {}

        def parse_holding_pushes(line: str, extra: Any) -> None:
            context = (extra or {}).get("context")
            ti = context.get("ti") if context else None
            if ti is not None:
                if id(ti) not in held:
                    held[id(ti)] = (ti, _HeldPushes(ti))
                extra = {**extra, "context": {**context, "ti": held[id(ti)][1]}}
            parse(line, extra)

        return parse_holding_pushes

    def execute(self, context: Any, **kwargs: Any) -> Any:
        try:
            return super().execute(context, **kwargs)
        finally:
            ti = context["ti"]
            pushed = getattr(ti, "_cosmos_xcom_backup_buffer", None)
            if pushed is not None and ti.try_number == 1:
                held = (k for k in pushed if k.endswith(HELD_SUFFIXES) and k != "task_status")
                results = {k: pushed[k] for k in held}
                ti.xcom_push(key=RESULTS_KEY, value=results)

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


def watch_after_build(group: Any) -> Any:
    """Run the group's sensors after its producer, one per model for the model and its tests
    (call before wiring the group's upstream; the group is rendered with TestBehavior.NONE).
    Returns the producer: what comes after the build waits for it, not for the sensors (5.)."""
    from airflow.sdk import TriggerRule
    from cosmos.constants import PRODUCER_WATCHER_TASK_ID

    tasks = _tasks(group)
    (producer,) = [t for t in tasks if t.task_id.endswith(PRODUCER_WATCHER_TASK_ID)]
    producer.dbt_cmd_flags = _without_resource_type_flags(producer.dbt_cmd_flags)  # build tests too
    if type(producer) is DbtProducerWatcherOperator:
        producer.__class__ = BuildProducer  # same constructor, no OpenLineage parse when unused
    sensors = [t for t in tasks if hasattr(t, "producer_task_id")]
    in_group = {t.task_id for t in tasks}
    by_id = {t.task_id: t for t in tasks}
    for sensor in sensors:
        if type(sensor) is DbtRunWatcherOperator:
            sensor.__class__ = ModelAndTestsSensor  # same constructor, a poke that checks tests too
            sensor.test_ids = tuple(producer.tests_per_model.get(sensor.model_unique_id, ()))
        elif type(sensor) is DbtSeedWatcherOperator:
            sensor.__class__ = SeedSensor
        if isinstance(sensor, DecidedInTriggerer):  # the scheduler defers it straight to the triggerer
            sensor.start_from_trigger = True
            sensor.start_trigger_args = StartTriggerArgs(
                trigger_cls=f"{__name__}.{ModelResultTrigger.__name__}",
                trigger_kwargs={
                    "model_unique_id": sensor.model_unique_id,
                    "producer_task_id": sensor.producer_task_id,
                    "test_ids": list(getattr(sensor, "test_ids", ())),
                },
                next_method=DecidedInTriggerer.resume_in_worker.__name__,
                timeout=timedelta(seconds=SENSOR_TIMEOUT_S),
            )
        sensor.deferrable = False
        sensor.mode = "poke"
        sensor.poke_interval = 1.0
        sensor.timeout = float(SENSOR_TIMEOUT_S)
        sensor.retries = 0
        for upstream in sensor.upstream_task_ids & in_group:  # the lineage edges (see 1.)
            by_id[upstream].downstream_task_ids.discard(sensor.task_id)
        sensor.upstream_task_ids.difference_update(in_group)
        producer >> sensor
        sensor.trigger_rule = TriggerRule.ONE_DONE
    return producer
