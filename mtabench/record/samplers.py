"""vmstat, iostat (child processes) and the queue sampler (a thread writing queue.txt)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from mtabench.record.postfix import QUEUES, queue_counts
from mtabench.record.procs import Child, spawn


def vmstat_argv(interval: int) -> list[str]:
    return ["vmstat", "-t", str(interval)]


def iostat_argv(interval: int) -> list[str]:
    return ["iostat", "-x", str(interval)]


def start_sysstat(run_dir: Path, interval: int) -> list[Child]:
    env_c = ["env", "LC_ALL=C"]  # the number and date formats the samples (and parsers) have
    return [
        spawn("vmstat", [*env_c, *vmstat_argv(interval)], run_dir / "vmstat.txt"),
        spawn("iostat", [*env_c, *iostat_argv(interval)], run_dir / "iostat.txt"),
    ]


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class QueueSampler:
    """Writes `utc,incoming,active,deferred,maildrop` every interval (the format queue_sizes reads)."""

    def __init__(self, path: Path, spool: Path, interval: int) -> None:
        self.path, self.spool, self.interval = path, spool, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="queue-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        with open(self.path, "w", encoding="utf-8") as fh:
            fh.write("utc," + ",".join(QUEUES) + "\n")
            next_at = time.monotonic()
            while not self._stop.is_set():
                at, counts = utc_now(), queue_counts(self.spool)
                fh.write(at + "," + ",".join(str(counts[q]) for q in QUEUES) + "\n")
                fh.flush()
                next_at += self.interval
                self._stop.wait(max(0.0, next_at - time.monotonic()))
