"""The executors' Python as one archive, for a cluster whose hosts share no disk with the driver.

A cluster's executors run the maillog parse (maillog_udf.py) in their own Python: it imports
`ingest.*`, `mtabench.*`, the compiled crate `mtabench_maillog`, pyarrow and pandas. None of
the driver's paths (the repo, its venv, the interpreter the venv was made from) exist on a
worker, so the archive carries them: Spark ships it with `spark.archives=<pack>#mtabench_env`
and unpacks it in each executor's working directory, whose Python is then
`./mtabench_env/bin/python`.

Layout (the archive's root is the environment's root):
- `bin/python3.11`, `lib/libpython3.11.so.1.0`, `lib/python3.11/`: the venv's base CPython
  (`sys.base_prefix`), stdlib without tests, IDLE, tkinter, ensurepip and its own site-packages;
- `bin/python`: a sh wrapper that points the loader at `lib/` beside it (the interpreter's
  RUNPATH names the driver's path), so the unpacked copy runs wherever it lands;
- `lib/python3.11/site-packages/`: the distributions an executor's parse task imports, found
  by importing what such a task imports in the venv's Python and mapping `sys.modules` to the
  distributions that own those files (never `pyspark/jars`: the worker runs its own Spark),
  plus the project's `ingest` and `mtabench` packages.

The archive is rebuilt only when its inputs change: the venv's installed distributions, the
project's package sources, the crate's compiled module (`<archive>.inputs` holds their hash).
"""

from __future__ import annotations

import ast
import fcntl
import hashlib
import json
import logging
import os
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

from mtabench.paths import REPO, Paths

log = logging.getLogger(__name__)

ENV_DIR = "mtabench_env"  # the folder name the archive unpacks to on an executor (`#mtabench_env`)
EXECUTOR_PYTHON = f"./{ENV_DIR}/bin/python"
PROJECT_PACKAGES = ("ingest", "mtabench")
# modules whose imports (at any depth, lazy ones too) an executor's parse task makes
TASK_MODULES = ("mtabench.engines.spark.maillog_udf", "mtabench.engines.spark.storage")
# what pyspark's Python worker imports for a mapInArrow task, besides the task's own modules
WORKER_IMPORTS = (
    "pyspark.daemon",
    "pyspark.worker",
    "pyspark.sql.pandas.serializers",
    "pyspark.sql.pandas.types",
    "pyspark.sql.pandas.utils",
    "pandas",
    "pyarrow",
    "mtabench_maillog",
)
STDLIB_LEFT_OUT = {"test", "tests", "idlelib", "tkinter", "turtledemo", "ensurepip", "site-packages"}
LAYOUT_VERSION = "1"  # part of the inputs' hash: a new layout rebuilds every archive

WRAPPER = """#!/bin/sh
# The relocated CPython: its libpython is in lib/ beside this file, wherever the archive landed.
here=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PYTHONNOUSERSITE=1 \\
    exec "$here/bin/python%(ver)s" "$@"
"""

# Run in the venv's Python: import what a task imports, then describe the interpreter, the
# imported files and the installed distributions (each with its top-level entries, its
# .dist-info and .libs folders among them).
_PROBE = r"""
import importlib, importlib.metadata as md, json, sys, sysconfig
for name in json.loads(sys.argv[1]):
    importlib.import_module(name)
from pyspark.sql.pandas.utils import require_minimum_pandas_version, require_minimum_pyarrow_version
require_minimum_pandas_version(); require_minimum_pyarrow_version()
files = set()
for m in list(sys.modules.values()):
    if getattr(m, "__file__", None):
        files.add(m.__file__)
    files.update(getattr(m, "__path__", None) or [])
site = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
dists = []
for d in md.distributions(path=site):
    tops = sorted({f.parts[0] for f in (d.files or []) if f.parts and f.parts[0] != ".."})
    dists.append({"name": d.metadata["Name"], "site": str(d.locate_file("")), "tops": tops})
print(json.dumps({
    "base_prefix": sys.base_prefix,
    "ver": "%d.%d" % sys.version_info[:2],
    "site": site,
    "files": sorted(files),
    "dists": dists,
}))
"""


def default_path() -> Path:
    return Paths.resolve().spark_dir / "executor-env.tar.gz"


def ensure_pack(out: Path | None = None, python: str = sys.executable) -> Path:
    """The archive at `out` (default data/spark/executor-env.tar.gz), built if missing or if
    its inputs changed since it was built."""
    out = Path(out or default_path()).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    stamp = out.with_name(out.name + ".inputs")
    with open(out.with_name(f".{out.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time; a waiter then reuses it
        digest = inputs_digest(python)
        if out.exists() and stamp.exists() and stamp.read_text().strip() == digest:
            log.info("executor environment %s is current", out)
            return out
        t0 = time.monotonic()
        build(out, python)
        stamp.write_text(digest + "\n")
        log.info(
            "executor environment %s: %.1f MB in %.1f s",
            out,
            out.stat().st_size / 1e6,
            time.monotonic() - t0,
        )
    return out


def inputs_digest(python: str = sys.executable) -> str:
    """The hash of what the archive holds: the interpreter, the venv's installed
    distributions (names and versions), the project's package sources, the crate's module."""
    info = json.loads(
        _run(
            python,
            "import json,sys,sysconfig,mtabench_maillog as m;"
            "print(json.dumps([sys.version,sys.base_prefix,sysconfig.get_paths()['purelib'],"
            "sysconfig.get_paths()['platlib'],m.__file__]))",
        )
    )
    version, base, purelib, platlib, crate_init = info
    h = hashlib.sha256(f"{LAYOUT_VERSION}\n{version}\n{base}\n".encode())
    for site in sorted({purelib, platlib}):
        for name in sorted(os.listdir(site)):
            if name.endswith(".dist-info"):
                h.update(name.encode() + b"\n")
    for f in files_under(Path(crate_init).parent):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    for pkg in PROJECT_PACKAGES:
        for f in files_under(REPO / pkg):
            h.update(str(f.relative_to(REPO)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def task_imports() -> list[str]:
    """Every module the task modules import (read from their source, so a new import in the
    parse function is packed without a change here), then the task modules themselves."""
    names: list[str] = []
    for mod in TASK_MODULES:
        src = REPO / (mod.replace(".", "/") + ".py")
        if not src.exists():
            continue
        for node in ast.walk(ast.parse(src.read_text())):
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.append(node.module)
        names.append(mod)
    return list(dict.fromkeys(n for n in names if n != "__future__"))


def build(out: Path, python: str = sys.executable) -> None:
    probe = json.loads(_run(python, _PROBE, json.dumps([*WORKER_IMPORTS, *task_imports()])))
    tmp, wrapper = out.with_name(f".{out.name}.tmp"), out.with_name(f".{out.name}.python")
    try:
        _write(tmp, wrapper, probe)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
        wrapper.unlink(missing_ok=True)


def _write(tmp: Path, wrapper: Path, probe: dict) -> None:
    base, ver = Path(probe["base_prefix"]), probe["ver"]
    wrapper.write_text(WRAPPER % {"ver": ver})
    wrapper.chmod(0o755)
    # gzip level 1: 139 MB in 10 s where the default 6 took 33 s for 123 MB (gzip(1) on this
    # archive's 393 MB); the bytes cross a network once per executor, the time is every build's
    with tarfile.open(tmp, "w:gz", compresslevel=1, dereference=True) as tar:
        tar.add(wrapper, "bin/python")
        tar.add(base / "bin" / f"python{ver}", f"bin/python{ver}")
        for lib in sorted((base / "lib").glob(f"libpython{ver}.so*")):
            if not lib.is_symlink():  # the soname the binary needs; a link would be a second copy
                tar.add(lib, f"lib/{lib.name}")
        stdlib = base / "lib" / f"python{ver}"
        for entry in sorted(stdlib.iterdir()):
            if entry.name not in STDLIB_LEFT_OUT and not entry.name.startswith("config-"):
                tar.add(entry, f"lib/python{ver}/{entry.name}", filter=_without_tests)
        site = f"lib/python{ver}/site-packages"
        for src, name in site_entries(probe):
            tar.add(src, f"{site}/{name}", filter=_without_tests_and_jars)
        for pkg in PROJECT_PACKAGES:
            tar.add(REPO / pkg, f"{site}/{pkg}", filter=_without_tests)


def site_entries(probe: dict) -> list[tuple[Path, str]]:
    """(path, name) of each site-packages entry an executor needs: every top-level entry of
    each distribution owning an imported file, and imported entries no distribution owns.
    The project's own (editable) install is left out: its packages are copied from source."""
    sites = [Path(s) for s in probe["site"]]
    owner = {(Path(d["site"]), top): d for d in probe["dists"] for top in d["tops"]}
    wanted: dict[Path, None] = {}
    for f in map(Path, probe["files"]):
        site = next((s for s in sites if f.is_relative_to(s) and f != s), None)
        if site is None or (top := f.relative_to(site).parts[0]) in PROJECT_PACKAGES:
            continue
        d = owner.get((site, top))
        for t in d["tops"] if d else [top]:
            if not t.endswith(".pth") and t not in PROJECT_PACKAGES:
                wanted[site / t] = None
    return [(p, p.name) for p in wanted if p.exists()]


def _without_tests(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Leave out test suites inside packages (`lib/python3.11/<pkg>/.../tests/`)."""
    return None if {"test", "tests"} & set(info.name.split("/")[3:]) else info


def _without_tests_and_jars(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if info.name.split("/")[3:5] == ["pyspark", "jars"]:
        return None
    return _without_tests(info)


def files_under(root: Path) -> Iterator[Path]:
    """Every file under `root` in name order, without bytecode caches."""
    for f in sorted(root.rglob("*")):
        if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
            yield f


def _run(python: str, code: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    res = subprocess.run([python, "-c", code, *args], capture_output=True, text=True, env=env, cwd=REPO)
    if res.returncode != 0:
        raise RuntimeError(f"{python} could not import what an executor needs:\n{res.stderr[-4000:]}")
    return res.stdout
