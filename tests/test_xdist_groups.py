"""Under pytest-xdist (`make test`) the tests sharing a module-scoped fixture run on one worker,
so the fixture is set up once (tests/xdist_groups.py, wired in conftest.py).

A real `pytest -n 2 --dist loadgroup` in a throwaway folder whose conftest loads the same hooks;
each test writes down the worker it ran on."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

SHARED = """
import os
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def shared():
    return "set up once"


@pytest.mark.parametrize("n", range(8))
def test_shared(shared, n):
    Path("ran").mkdir(exist_ok=True)
    Path("ran", f"shared-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])
"""


def test_tests_sharing_a_module_fixture_run_on_one_worker(tmp_path):
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from xdist_groups import (  # noqa: F401\n"
        "    pytest_collection_modifyitems, pytest_configure_node, pytest_xdist_make_scheduler,\n"
        ")\n"
    )
    (tmp_path / "test_shared.py").write_text(SHARED)
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    workers = {f.name: f.read_text() for f in (tmp_path / "ran").iterdir()}
    assert len(workers) == 8, workers
    assert len(set(workers.values())) == 1, workers
