"""A test run that changes the working tree fails, and names what it changed; edits made
before the run do not make it fail (tests/tree_clean.py, wired in conftest.py).

Each case is a real pytest run in a throwaway git repository whose conftest loads the same
hooks, so the repository under test is never touched."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path) -> Path:
    """A checkout with two committed files, one of them edited before the run, and data/ ignored."""
    r = tmp_path / "checkout"
    (r / "tests").mkdir(parents=True)
    (r / "tracked.txt").write_text("as committed\n")
    (r / "edited.txt").write_text("as committed\n")
    (r / ".gitignore").write_text("/data/\n__pycache__/\n.pytest_cache/\n")
    (r / "tests" / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from tree_clean import pytest_sessionfinish, pytest_sessionstart  # noqa: F401\n"
    )
    _git(r, "init", "-q")
    _git(r, "add", ".")
    _git(r, "-c", "user.name=t", "-c", "user.email=t@localhost", "commit", "-qm", "base")
    (r / "edited.txt").write_text("uncommitted work\n")
    return r


def _pytest(repo: Path, body: str, *args: str) -> subprocess.CompletedProcess:
    (repo / "tests" / "test_case.py").write_text(f"from pathlib import Path\n\n\ndef test_case():\n{body}\n")
    _git(repo, "add", "tests/test_case.py")  # the test file itself is part of the tree as found
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "tests"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_a_run_that_writes_only_under_data_passes(repo):
    p = _pytest(repo, "    Path('data').mkdir()\n    Path('data/x.png').write_bytes(b'png')")
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_run_that_modifies_a_tracked_file_fails_and_names_it(repo):
    p = _pytest(repo, "    Path('tracked.txt').write_text('rewritten by a test')")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "tracked.txt" in p.stdout and "edited.txt" not in p.stdout, p.stdout


def test_a_run_that_adds_a_file_outside_gitignore_fails(repo):
    p = _pytest(repo, "    Path('screenshot.png').write_bytes(b'png')")
    assert p.returncode == 1 and "screenshot.png" in p.stdout, p.stdout + p.stderr


def test_a_run_that_changes_an_already_edited_file_again_fails(repo):
    p = _pytest(repo, "    Path('edited.txt').write_text('changed again during the run')")
    assert p.returncode == 1 and "edited.txt" in p.stdout, p.stdout + p.stderr


def test_a_parallel_run_that_modifies_a_tracked_file_fails_and_names_it(repo):
    """Under pytest-xdist (as `make test` runs) a worker's change fails the whole run."""
    p = _pytest(repo, "    Path('tracked.txt').write_text('rewritten by a test')", "-n", "2")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "tracked.txt" in p.stdout and "edited.txt" not in p.stdout, p.stdout
    assert "1 passed" in p.stdout, p.stdout  # the test itself passed on a worker: the check failed the run
