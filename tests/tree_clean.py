"""A test run leaves the working tree as it found it.

pytest hooks (conftest.py imports them): at the start of the run, the repository's `git status`
(tracked changes and untracked files outside .gitignore) with a hash of each listed file's
content; at the end, the same again. A path whose status or content changed during the run
fails the run (exit status 1) and is named. Edits made before the run (a developer's
uncommitted work) are in both snapshots and pass; files under data/ are gitignored and never
listed. Under pytest-xdist the controller takes both snapshots, around all of its workers.
Outside a git checkout (an unpacked release) there is nothing to compare.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

import pytest

_BEFORE = pytest.StashKey[tuple[Path, dict[str, str]]]()


def _toplevel(start: Path) -> Path | None:
    p = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=start, capture_output=True, text=True, check=False
    )
    return Path(p.stdout.strip()) if p.returncode == 0 else None


def tree_state(root: Path) -> dict[str, str]:
    """Each path `git status` lists, mapped to its status code and a hash of its content."""
    out = subprocess.run(
        ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    entries = iter(out.split(b"\0"))
    state = {}
    for entry in entries:
        if not entry:
            continue
        code, path = entry[:2].decode(), entry[3:].decode(errors="surrogateescape")
        if code[0] in "RC":
            next(entries, None)  # a rename's or copy's source path follows its entry
        f = root / path
        digest = hashlib.sha256(f.read_bytes()).hexdigest() if f.is_file() else "-"
        state[path] = f"{code} {digest}"
    return state


def changed_paths(before: dict[str, str], after: dict[str, str]) -> list[str]:
    return sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))


def _is_xdist_worker(config: pytest.Config) -> bool:
    """Under pytest-xdist the controller's session spans every worker's: it alone compares."""
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    if _is_xdist_worker(session.config):
        return
    root = _toplevel(session.config.rootpath)
    if root is not None:
        session.config.stash[_BEFORE] = (root, tree_state(root))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _BEFORE not in session.config.stash:
        return
    root, before = session.config.stash[_BEFORE]
    changed = changed_paths(before, tree_state(root))
    if not changed:
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    message = "the test run changed files in the working tree (write under data/ or a temp dir):\n"
    message += "\n".join(f"  {p}" for p in changed)
    if reporter is not None:
        reporter.write_line(message, red=True)
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
