"""The executors' packed Python (mtabench/engines/spark/pack.py): what the archive holds, that
it runs unpacked where none of the driver's paths exist, and that it is rebuilt only when its
inputs change."""

from __future__ import annotations

import shlex
import subprocess
import sys
import tarfile

import pytest
from spark_cluster import driver_paths

from mtabench.engines.spark.pack import ensure_pack


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    return ensure_pack(tmp_path_factory.mktemp("pack") / "env.tar.gz")


def test_archive_holds_the_interpreter_and_what_a_task_imports(pack):
    with tarfile.open(pack) as tar:
        members = tar.getmembers()
    names = {m.name for m in members}
    site = "lib/python3.11/site-packages"
    for want in (
        "bin/python",
        "bin/python3.11",
        "lib/libpython3.11.so.1.0",
        "lib/python3.11/os.py",
        f"{site}/mtabench_maillog/__init__.py",
        f"{site}/ingest/parsers/maillog.py",
        f"{site}/mtabench/engines/spark/maillog_udf.py",
        f"{site}/pyarrow/__init__.py",
        f"{site}/pandas/__init__.py",
        f"{site}/pyspark/worker.py",
    ):
        assert want in names, want
    assert not [n for n in names if n.startswith(f"{site}/pyspark/jars")]
    assert not [n for n in names if "/tests/" in n or n.startswith("lib/python3.11/test/")]
    assert not [n for n in names if n.startswith(("lib/python3.11/idlelib", "lib/python3.11/tkinter"))]
    assert not [m.name for m in members if m.issym() or m.islnk()]  # plain files unpack anywhere
    assert not [n for n in names if n.startswith(f"{site}/great_expectations")]  # no task imports it


def test_unpacked_python_runs_where_the_drivers_paths_are_hidden(pack, tmp_path):
    env_dir = tmp_path / "mtabench_env"
    env_dir.mkdir()
    with tarfile.open(pack) as tar:
        tar.extractall(env_dir, filter="tar")
    hide = " && ".join(f"mount -t tmpfs tmpfs {shlex.quote(str(p))}" for p in driver_paths())
    code = (
        "import sys, mtabench_maillog, pyarrow, pandas, ingest.parsers.maillog as m;"
        "print(sys.prefix); print(m.NOISE)"
    )
    script = f"{hide} && exec {shlex.quote(str(env_dir / 'bin/python'))} -c {shlex.quote(code)}"
    out = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(env_dir), "__noise"]
    assert not str(env_dir).startswith(sys.base_prefix)


def test_rebuilt_only_when_inputs_change(pack):
    stamp = pack.with_name(pack.name + ".inputs")
    before = pack.stat().st_mtime_ns
    assert ensure_pack(pack) == pack and pack.stat().st_mtime_ns == before  # same inputs: reused
    stamp.write_text("inputs of another build\n")
    ensure_pack(pack)
    assert pack.stat().st_mtime_ns != before
    assert stamp.read_text().strip() != "inputs of another build"
