"""A Spark standalone cluster on 127.0.0.1 whose workers do not see the driver's disk.

The master runs from the venv's pyspark. Each worker runs in a mount namespace of its own
(`unshare -m --propagation private`, as root) where, before it starts:
- a tmpfs covers /opt, the Spark distribution (pyspark's folder: bin/, jars/) is bound
  read-only at /opt/spark ("Spark installed on the worker host"), and the worker's own folder
  /opt/work (its executors' folders, where each unpacks the archives it is sent, and their
  local dirs) is a tmpfs of its own, gone with the worker;
- an empty tmpfs covers each of the driver's paths: the repo's top folder (/work: the repo,
  its .venv, data/), the interpreter the venv was made from (/root/.pyenv), the venv, and
  whatever the caller adds (a test's data folder).
Java (/usr/lib/jvm) and the host's system stay visible. The worker's environment is a
minimal one (PATH, HOME, SPARK_HOME) plus what the caller passes (`env=`: e.g. AWS_* or
MTABENCH_S3_ENDPOINT for storage the executors reach over loopback).

Every process runs in a process group of its own; `stop()` (and leaving the context) kills
each group and its descendants (pyspark's daemon makes a group of its own) and removes the
cluster's folder. Start-up waits are bounded; the REST submission server is off, the web UIs
bind 127.0.0.1 on ephemeral ports.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pyspark

REPO = Path(__file__).resolve().parents[1]
SPARK_DIST = Path(pyspark.__file__).resolve().parent
WORKER_SPARK_HOME = "/opt/spark"
WORKER_DIR = "/opt/work"
WORKER_DIR_SIZE = "4g"  # each executor unpacks the pack (~0.4 GB) here
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
START_TIMEOUT = 90.0


def driver_paths() -> list[Path]:
    """The driver's folders a worker must not see: the repo's top folder (or the repo where
    that is a system folder), the venv and the root of the interpreter it was made from."""
    top = Path("/", REPO.parts[1])
    paths = [REPO if str(top) in ("/tmp", "/root", "/home", "/usr", "/var", "/opt") else top]
    base = Path(sys.base_prefix).resolve()
    pyenv = next((p for p in [base, *base.parents] if p.name == ".pyenv"), base)
    paths += [pyenv, Path(sys.prefix).resolve()]
    return _outermost(paths)


def _outermost(paths: list[Path]) -> list[Path]:
    """Each existing path once, none under another (a tmpfs on a parent hides its children)."""
    out: list[Path] = []
    for p in sorted({Path(p).resolve() for p in paths}, key=lambda p: len(p.parts)):
        if p.exists() and not any(p.is_relative_to(o) for o in out):
            out.append(p)
    return out


class SparkCluster:
    def __init__(
        self,
        workers: int = 2,
        cores: int = 1,
        memory: str = "1g",
        hide: list[Path] | tuple[Path, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.n_workers, self.cores, self.memory = workers, cores, memory
        self.hidden = _outermost([*driver_paths(), *map(Path, hide)])
        self.env = dict(env or {})
        self.root = Path(tempfile.mkdtemp(prefix="mtabench-spark-cluster-"))
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen | None] = []
        self.master_url = ""

    # --- start -----------------------------------------------------------------------------
    def start(self) -> SparkCluster:
        t0 = time.monotonic()
        try:
            self._start_master()
            for i in range(self.n_workers):
                self.workers.append(self._spawn_worker(i))
            for i in range(self.n_workers):
                log = self.root / f"worker-{i}.log"
                self._wait_log(log, r"Bound WorkerWebUI to 127\.0\.0\.1,")
                self._wait_log(log, r"Successfully registered with master")
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - t0
        return self

    def _start_master(self) -> None:
        env = {
            "PATH": SYSTEM_PATH,
            "HOME": str(self.root),
            "SPARK_HOME": str(SPARK_DIST),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        }
        cmd = [
            str(SPARK_DIST / "bin" / "spark-class"),
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", "0", "--webui-port", "0"),
        ]
        self.master = self._popen(cmd, env, self.root / "master.log")
        found = self._wait_log(
            self.root / "master.log", r"Starting Spark master at (spark://127\.0\.0\.1:\d+)"
        )
        self.master_url = found.group(1)
        self._wait_log(self.root / "master.log", r"Bound MasterWebUI to 127\.0\.0\.1,")
        if "REST server" in (self.root / "master.log").read_text():
            raise RuntimeError("the master started its REST submission server")

    def _spawn_worker(self, i: int) -> subprocess.Popen:
        mounts = [
            "mount -t tmpfs -o size=1m,mode=755 tmpfs /opt",
            f"mkdir {WORKER_SPARK_HOME} {WORKER_DIR}",
            f"mount --bind {shlex.quote(str(SPARK_DIST))} {WORKER_SPARK_HOME}",
            f"mount -o remount,bind,ro {WORKER_SPARK_HOME}",
            f"mount -t tmpfs -o size={WORKER_DIR_SIZE},mode=755 tmpfs {WORKER_DIR}",
            f"mkdir {WORKER_DIR}/local",
            *(f"mount -t tmpfs -o size=1m,mode=755 tmpfs {shlex.quote(str(p))}" for p in self.hidden),
        ]
        worker = [
            f"{WORKER_SPARK_HOME}/bin/spark-class",
            "org.apache.spark.deploy.worker.Worker",
            *("--host", "127.0.0.1", "--port", "0", "--webui-port", "0"),
            *("--cores", str(self.cores), "--memory", self.memory, "--work-dir", f"{WORKER_DIR}/apps"),
            self.master_url,
        ]
        script = " && ".join([*mounts, "exec " + shlex.join(worker)])
        env = {
            "PATH": SYSTEM_PATH,
            "HOME": WORKER_DIR,
            "LANG": "C.UTF-8",
            "SPARK_HOME": WORKER_SPARK_HOME,
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_DIRS": f"{WORKER_DIR}/local",
            **self.env,
        }
        cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", "set -e; " + script]
        return self._popen(cmd, env, self.root / f"worker-{i}.log")

    def _popen(self, cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
        with open(log, "ab") as out:
            return subprocess.Popen(
                cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, cwd=self.root,
            )  # fmt: skip

    def _wait_log(self, log: Path, pattern: str, timeout: float = START_TIMEOUT) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if m := re.search(pattern, log.read_text(errors="replace") if log.exists() else ""):
                return m
            dead = [p for p in [self.master, *self.workers] if p is not None and p.poll() is not None]
            if dead:
                raise RuntimeError(f"a cluster process exited ({dead[0].args[:3]}): see {log}\n{_tail(log)}")
            time.sleep(0.2)
        raise TimeoutError(f"no /{pattern}/ in {log} after {timeout:.0f} s\n{_tail(log)}")

    def worker_logs(self) -> str:
        """Every worker's log so far (the executors' launch commands among them)."""
        return "".join(
            (self.root / f"worker-{i}.log").read_text(errors="replace") for i in range(self.n_workers)
        )

    # --- stop ------------------------------------------------------------------------------
    def kill_worker(self, i: int) -> None:
        """SIGKILL worker i: its JVM, its executors and their Python processes."""
        proc = self.workers[i]
        if proc is not None:
            _kill_tree(proc)
            self.workers[i] = None

    def stop(self) -> None:
        for i in range(len(self.workers)):
            self.kill_worker(i)
        if self.master is not None:
            _kill_tree(self.master)
            self.master = None
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> SparkCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@contextmanager
def spark_cluster(**kw) -> Iterator[SparkCluster]:
    with SparkCluster(**kw) as cluster:
        yield cluster


def _kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL a process's group and every descendant (found before the kill: the orphans
    would be re-parented), then reap it."""
    pids = [proc.pid, *_descendants(proc.pid)]
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _tail(log: Path, n: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-n:]) if log.exists() else ""
