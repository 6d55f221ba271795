"""Which tests share a worker when the suite runs in parallel (`make test`: pytest-xdist with
`--dist loadgroup`), and which groups start first.

A group runs whole on one worker, in collection order:
- the files of a service set up once per worker (GROUPS): `superset` (a real Superset on a
  loopback port; its venv under envs/superset, which two workers must not build at once),
  `airflow` (Airflow set-ups sharing the venv under envs/airflow), `spark` (a local SparkSession
  in the worker's process);
- otherwise a module's tests that share a module-scoped fixture (an ingest, a landing, a site
  build), so that fixture is built once, not once per worker;
- every other test is scheduled on its own.

Each worker has its own session fixtures (`data_dir`, `built_db`: tests write into both, so
they are not shared between workers). The work queue starts with the groups in FIRST, longest
first, so they run side by side on different workers and the short tests fill in around them;
the rest keeps collection order (`--no-loadscope-reorder`).

How the groups reach the scheduler: xdist's loadgroup appends `@group` to a test's node id,
which pytest >= 9.2 ignores (node ids are structured; pytest-xdist#1386), so the tests would
silently be spread one by one. Instead each worker writes the group of every grouped test to a
folder the controller named (pytest_configure_node), and the controller's scheduler (a
LoadGroupScheduling) reads them. conftest.py imports these hooks; a serial run only gets marks.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

GROUPS = {
    "superset": ("test_superset_dashboards.py", "test_serving_guard.py"),
    "airflow": (
        "test_airflow_e2e.py",
        "test_airflow_scheduler.py",
        "test_airflow_services.py",
        "test_airflow_dags.py",
        "test_airflow_spark.py",
    ),
    "spark": ("test_spark_parity.py", "test_maillog_spark.py"),
}
GROUP_OF_FILE = {name: group for group, names in GROUPS.items() for name in names}

# The groups that take longest, longest first: in a `make test` with --junitxml their tests
# took 1,580 s (superset), 950 s (airflow) and 800 s (spark) of the 6,010 s all tests took, on
# a machine loaded by other jobs. Superset starts on one worker, Airflow then Spark on the other.
FIRST = ("superset", "airflow", "spark")

_FOLDER = "mtabench_xdist_groups"  # the workerinput key: where workers write their groups
_FOLDER_KEY = pytest.StashKey[str]()


def _named_group(item: pytest.Item) -> str | None:
    mark = item.get_closest_marker("xdist_group")
    if mark is None:
        return None
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope == "module" for defs in info.name2fixturedefs.values() for d in defs)


def group_of(item: pytest.Item) -> str | None:
    if (name := _named_group(item)) is not None:
        return name
    if (name := GROUP_OF_FILE.get(item.path.name)) is not None:
        return name
    if _shares_a_module_fixture(item):
        return item.nodeid.split("::", 1)[0]
    return None


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    missing = [name for name in GROUP_OF_FILE if not (TESTS / name).exists()]
    if missing:
        raise pytest.UsageError(f"tests/xdist_groups.py names test files that are gone: {missing}")
    for item in items:
        group = group_of(item)
        if group is not None and _named_group(item) is None:
            item.add_marker(pytest.mark.xdist_group(group))
    result = yield
    folder = getattr(config, "workerinput", {}).get(_FOLDER)
    if folder is None:
        return result  # not an xdist worker: a serial run keeps collection order
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(_named_group(item) or "", len(FIRST)))
    groups = {item.nodeid: _named_group(item) for item in items if _named_group(item) is not None}
    path = Path(folder) / f"{config.workerinput['workerid']}.json"
    path.with_suffix(".tmp").write_text(json.dumps(groups))
    os.replace(path.with_suffix(".tmp"), path)
    return result


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Controller: the folder where each worker writes its tests' groups."""
    stash = node.config.stash
    if _FOLDER_KEY not in stash:
        stash[_FOLDER_KEY] = tempfile.mkdtemp(prefix="mtabench-xdist-groups-")
    node.workerinput[_FOLDER] = stash[_FOLDER_KEY]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class WrittenGroupScheduling(LoadGroupScheduling):
        """loadgroup, with each test's group read from what the workers wrote."""

        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:
                self.groups = _read_groups(Path(config.stash[_FOLDER_KEY]))
            group = self.groups.get(nodeid)
            return f"group {group}" if group is not None else super()._split_scope(nodeid)

    return WrittenGroupScheduling(config, log)


def _read_groups(folder: Path) -> dict[str, str]:
    """Every worker's groups (each collected the same tests), then the folder is removed."""
    groups: dict[str, str] = {}
    files = sorted(folder.glob("*.json"))
    for f in files:
        groups.update(json.loads(f.read_text()))
    shutil.rmtree(folder, ignore_errors=True)
    if not files:
        raise RuntimeError(f"no worker wrote its test groups into {folder}: tests would share set-ups")
    return groups
