"""Children in their own process groups, so stopping one stops everything it started."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Child:
    name: str
    proc: subprocess.Popen

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal_group(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)  # pgid == pid (start_new_session)

    def wait(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, first: int = signal.SIGTERM, grace_s: float = 5.0) -> int:
        """Send `first` to the group, then SIGTERM, then SIGKILL; reap and return the exit status."""
        for sig, wait_s in ((first, grace_s), (signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            if not self.alive():
                break
            self.signal_group(sig)
            self.wait(wait_s)
        self.signal_group(signal.SIGKILL)  # anything the leader left behind in its group
        return exit_status(self.proc.wait())


def spawn(name: str, argv: list[str], out: Path, cwd: Path | None = None) -> Child:
    """Start argv with stdout and stderr into `out`, in a new session (own process group)."""
    with open(out, "ab") as fh:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=fh,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            start_new_session=True,
        )
    return Child(name, proc)


def exit_status(rc: int) -> int:
    """Shell convention: 128 + signal number for a child killed by a signal."""
    return 128 - rc if rc < 0 else rc


def sleep_until(deadline: float, stop: callable = lambda: False, step: float = 0.2) -> None:
    while time.monotonic() < deadline and not stop():
        time.sleep(min(step, max(0.0, deadline - time.monotonic())))
