"""Publishing goes where the user asked, and a publish killed mid-copy leaves nothing behind."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time

from conftest import SAMPLES

from mtabench.cli import main
from mtabench.publish import publish


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_scratch_build_leaves_the_default_serving_file_alone(built_db, data_dir, tmp_path):
    default_serving = data_dir / "serving" / "mtabench.duckdb"
    before = _sha(default_serving)
    archive = tmp_path / "archive"
    shutil.copytree(SAMPLES / "seed000" / "s11-elvtune", archive / "s11-elvtune")
    scratch = tmp_path / "scratch" / "x.duckdb"
    assert main(["run", str(archive), "--db", str(scratch)]) == 0
    assert _sha(default_serving) == before
    derived = scratch.parent / "serving" / "x.duckdb"
    assert derived.is_file() and _sha(derived) == _sha(scratch)
    explicit = tmp_path / "elsewhere" / "served.duckdb"
    assert main(["publish", "--db", str(scratch), "--serving-db", str(explicit)]) == 0
    assert _sha(explicit) == _sha(scratch)
    assert _sha(default_serving) == before


KILLED_PUBLISH = """
import sys
from pathlib import Path
from mtabench.publish import publish
publish(Path(sys.argv[1]), Path(sys.argv[2]))
"""


def test_publish_killed_mid_copy_is_cleaned_up_by_the_next(tmp_path):
    big = tmp_path / "big.duckdb"
    with open(big, "wb") as f:  # large enough that the copy takes a while
        for _ in range(256):
            f.write(os.urandom(1 << 20))
    serving = tmp_path / "serving" / "mtabench.duckdb"
    serving.parent.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", KILLED_PUBLISH, str(big), str(serving)])
    deadline = time.monotonic() + 30
    leftovers: list = []
    while not leftovers and time.monotonic() < deadline:
        leftovers = list(serving.parent.glob(".publishing-*.duckdb"))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert leftovers, "the child never started copying"
    assert leftovers[0].exists() and not serving.exists()  # killed before os.replace
    # a publish by a live process (this one) in the same folder must be left alone
    live = serving.parent / f".publishing-{os.getpid()}-inflight.duckdb"
    live.write_bytes(b"in progress")

    small = tmp_path / "small.duckdb"
    small.write_bytes(b"validated")
    publish(small, serving)
    assert serving.read_bytes() == b"validated"
    assert sorted(serving.parent.iterdir()) == sorted([serving, live])
