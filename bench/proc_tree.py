"""A command watched as a process tree (Linux /proc): wall time, CPU time and the peak of the
summed RSS of the process and every process it starts. `mtabench run` runs dbt, and dbt may
start Spark's JVM, as children: wait4's ru_maxrss is one process's peak, and its CPU counts
only the children the top process reaped."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SAMPLE_S = 0.25


@dataclass
class Watched:
    wall_s: float
    cpu_s: float  # the larger of wait4's (top + reaped children) and the sampled tree's
    peak_bytes: int  # the summed RSS of the tree, sampled
    own_peak_bytes: int  # wait4's ru_maxrss: the largest single process
    exit_code: int


def _tree() -> tuple[dict[int, int], dict[int, int]]:
    """pid -> parent pid, and pid -> user + system clock ticks so far, of every process."""
    parent: dict[int, int] = {}
    ticks: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        ticks[pid] = int(fields[11]) + int(fields[12])  # utime, stime
    return parent, ticks


def _descendants(root: int, parent: dict[int, int]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, ppid in parent.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _rss_bytes(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, IndexError, ValueError):
        return 0


def watch(argv: list[str], env: dict[str, str], log: Path, cwd: Path | None = None) -> Watched:
    """Run `argv` (output to `log`) and watch its tree every SAMPLE_S until it exits."""
    peak, done = 0, threading.Event()
    cpu_ticks: dict[int, int] = {}
    t0 = time.perf_counter()
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=cwd)

        def sample() -> None:
            nonlocal peak
            while not done.wait(SAMPLE_S):
                parent, ticks = _tree()
                pids = _descendants(proc.pid, parent)
                peak = max(peak, sum(_rss_bytes(pid) for pid in pids))
                for pid in pids:
                    if pid in ticks:
                        cpu_ticks[pid] = max(cpu_ticks.get(pid, 0), ticks[pid])

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        done.set()
        sampler.join()
    wall = time.perf_counter() - t0
    own = usage.ru_utime + usage.ru_stime
    sampled = sum(cpu_ticks.values()) / os.sysconf("SC_CLK_TCK")
    return Watched(wall, max(own, sampled), peak, usage.ru_maxrss * 1024, os.waitstatus_to_exitcode(status))
