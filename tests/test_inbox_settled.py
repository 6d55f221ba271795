"""A run dropped into the inbox is ingested only once whole (ingest/settled.py): the inbox
watcher's rule (mtabench/airflow/inbox_watch.py) and `ingest --new --settle`'s."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import time

import duckdb
from conftest import REPO, SAMPLES

from ingest.settled import BROKEN_FACTOR, whole_runs

RUN = SAMPLES / "runs" / "a-baseline-t5"
SETTLE = 2.0


def later(seconds: float) -> int:
    return time.time_ns() + int(seconds * 1e9)


def tgz(src) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(src, arcname=src.name)
    return buf.getvalue()


def test_a_folder_is_whole_once_unchanged_for_the_settle_time(tmp_path):
    inbox = tmp_path / "inbox"
    shutil.copytree(RUN, inbox / "runs" / "r1")  # copy2 keeps the samples' old mtimes: ctime says new
    whole, copying = whole_runs(inbox, SETTLE)
    assert (whole, copying) == ({}, ["runs/r1"])
    whole, copying = whole_runs(inbox, SETTLE, now_ns=later(SETTLE))
    files = sorted(p for p in (inbox / "runs" / "r1").iterdir())
    assert list(whole) == ["runs/r1"] and whole["runs/r1"][1:] == (
        len(files),
        sum(p.stat().st_size for p in files),
    )
    assert copying == []
    # one more line written: copying again, and a new signature once settled
    before = whole["runs/r1"]
    with (inbox / "runs" / "r1" / "postal.csv").open("a") as f:
        f.write("Server timed out on read.\n")
    assert whole_runs(inbox, SETTLE) == ({}, ["runs/r1"])
    after, _ = whole_runs(inbox, SETTLE, now_ns=later(SETTLE))
    assert after["runs/r1"] != before


def test_a_bundle_is_whole_when_it_reads_to_the_end_and_broken_only_much_later(tmp_path):
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    data = tgz(RUN)
    (inbox / "good.tar.gz").write_bytes(data)
    (inbox / "half.tar.gz").write_bytes(data[: len(data) // 2])
    assert whole_runs(inbox, SETTLE)[0] == {}
    whole, copying = whole_runs(inbox, SETTLE, now_ns=later(SETTLE))
    assert list(whole) == ["good.tar.gz"] and copying == ["half.tar.gz"]
    whole, _ = whole_runs(inbox, SETTLE, now_ns=later(BROKEN_FACTOR * SETTLE))
    assert set(whole) == {"good.tar.gz", "half.tar.gz"}  # broken, not copying: ingested as an error


def test_ingest_new_with_settle_waits_for_a_run_still_being_copied(tmp_path):
    inbox, data = tmp_path / "inbox", tmp_path / "data"
    shutil.copytree(RUN, inbox / "runs" / "r1")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    env["MTABENCH_DATA"] = str(data)
    cmd = [sys.executable, "-m", "mtabench.cli.main", "ingest", str(inbox), "--new"]

    def ingest(settle: float) -> str:
        proc = subprocess.run(
            [*cmd, "--settle", str(settle)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout

    out = ingest(600)
    assert "copying    runs/r1" in out and "nothing new" in out
    assert not (data / "mtabench.duckdb").exists() or _files(data) == 0
    time.sleep(0.6)
    ingest(0.5)  # quiet for longer than the settle time now
    assert _files(data) == sum(1 for p in (inbox / "runs" / "r1").iterdir())


def _files(data) -> int:
    with duckdb.connect(str(data / "mtabench.duckdb"), read_only=True) as con:
        return con.execute("select count(*) from raw.files").fetchone()[0]
