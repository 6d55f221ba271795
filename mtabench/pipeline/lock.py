"""One lock for the whole pipeline on a database, and child processes that die with us.

Ingest, dbt, GX and publish write the same DuckDB file and must run one at a time. The
lock is an flock on `<db>.lock` holding the owner's pid: the kernel drops it when the
owner dies (even by kill -9), so a stale lock file never blocks a later run. dbt runs as
a child process; PR_SET_PDEATHSIG makes the kernel kill it when its parent dies, so a
killed `mtabench` never leaves dbt holding the database lock.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PR_SET_PDEATHSIG = 1


class PipelineBusy(Exception):
    """Another process holds the pipeline lock of this database."""


def lock_path(db: Path) -> Path:
    return db.with_name(db.name + ".lock")


@contextmanager
def pipeline_lock(db: Path) -> Iterator[None]:
    path = lock_path(db)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by children (PEP 446)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise PipelineBusy(f"another run (pid {pid}) holds {db}") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def popen_tied(cmd: list[str], **kwargs) -> subprocess.Popen:
    """subprocess.Popen whose child the kernel kills when this process dies."""
    return subprocess.Popen(cmd, preexec_fn=_die_with_parent, **kwargs)  # noqa: PLW1509
