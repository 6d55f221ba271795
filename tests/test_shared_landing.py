"""Two archives in one landing (`make run` on samples/ and the Airflow inbox share data/):
each ingest removes only runs its own archive landed and no longer holds; `ingest --new`
(the Airflow task) removes a run moved out of the inbox, every row of it."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
from conftest import REPO, SAMPLES

MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]
A_RUNS = ("a-baseline-t5", "d-errors-rcpt-rejects", "e-smtp-source-s5")
B_RUNS = ("c-throttled-queue-backlog", "h-rabid-alone")


def ingest(data: Path, archive: Path, *extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    env["MTABENCH_DATA"] = str(data)
    proc = subprocess.run(
        [*MTABENCH, "ingest", str(archive), *extra], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def archive_of(root: Path, runs: tuple[str, ...]) -> Path:
    for run in runs:
        shutil.copytree(SAMPLES / "runs" / run, root / "runs" / run)
    return root


def run_keys(db: Path) -> set[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return {
            r[0]
            for r in con.execute(
                "select run_key from raw.runs union select run_key from raw.files"
            ).fetchall()
        }


def rows_of_unknown_files(db: Path) -> dict[str, int]:
    """Rows in any landing table (or Parquet part list) whose file is no longer in raw.files."""
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [
            t
            for (t,) in con.execute(
                "select distinct table_name from information_schema.columns "
                "where table_schema = 'raw' and column_name = 'file_id' and table_name <> 'files'"
            ).fetchall()
        ]
        counts = {
            t: con.execute(
                f'select count(*) from raw."{t}" where file_id not in (select file_id from raw.files)'
            ).fetchone()[0]
            for t in tables
        }
    return {t: n for t, n in counts.items() if n}


def test_each_archive_removes_only_its_own_runs(tmp_path):
    data = tmp_path / "data"
    a = archive_of(tmp_path / "a", A_RUNS)
    b = archive_of(tmp_path / "b", B_RUNS)
    ingest(data, a)
    out = ingest(data, b)
    db = data / "mtabench.duckdb"
    a_keys = {f"runs/{r}" for r in A_RUNS}
    b_keys = {f"runs/{r}" for r in B_RUNS}
    assert run_keys(db) == a_keys | b_keys, "ingesting B removed A's runs"
    assert "removed " not in out
    held = next(line for line in out.splitlines() if "landing holds" in line)
    assert f"{a.resolve()} ({len(A_RUNS)} runs)" in held and f"{b.resolve()} ({len(B_RUNS)} runs)" in held

    shutil.rmtree(a / "runs" / A_RUNS[0])
    out = ingest(data, a)
    assert run_keys(db) == (a_keys - {f"runs/{A_RUNS[0]}"}) | b_keys
    assert f"removed runs/{A_RUNS[0]}: no longer in {a}" in out
    assert rows_of_unknown_files(db) == {}


def test_new_only_ingest_removes_a_run_moved_out_of_the_inbox(tmp_path):
    data, inbox = tmp_path / "data", archive_of(tmp_path / "inbox", A_RUNS)
    db = data / "mtabench.duckdb"
    ingest(data, inbox, "--new")
    with duckdb.connect(str(db), read_only=True) as con:
        gone_files = con.execute(
            "select count(*) from raw.files where run_key = ?", [f"runs/{A_RUNS[1]}"]
        ).fetchone()[0]
    assert gone_files == sum(1 for p in (inbox / "runs" / A_RUNS[1]).iterdir() if p.is_file())
    shutil.move(inbox / "runs" / A_RUNS[1], tmp_path / "moved-out")
    out = ingest(data, inbox, "--new")  # nothing new: only a run gone
    assert f"removed runs/{A_RUNS[1]}: no longer in {inbox}" in out
    assert run_keys(db) == {f"runs/{r}" for r in A_RUNS if r != A_RUNS[1]}
    assert rows_of_unknown_files(db) == {}
    with duckdb.connect(str(db), read_only=True) as con:
        left = {
            t: con.execute(
                f'select count(*) from raw."{t}" where run_key = ?', [f"runs/{A_RUNS[1]}"]
            ).fetchone()[0]
            for (t,) in con.execute(
                "select distinct table_name from information_schema.columns "
                "where table_schema = 'raw' and column_name = 'run_key'"
            ).fetchall()
        }
    assert not any(left.values()), left


def test_a_run_copied_into_another_archive_keeps_its_own_id(tmp_path):
    """A sample run copied into the inbox is a second run (another run key) claiming the same
    run id: the run landed first keeps the id, the copy is renamed, and no id names two runs
    (the `runs` source's unique test would stop every model of the build)."""
    data = tmp_path / "data"
    samples = archive_of(tmp_path / "samples", A_RUNS[:1])
    inbox = tmp_path / "inbox"
    shutil.copytree(SAMPLES / "runs" / A_RUNS[0], inbox / A_RUNS[0])
    ingest(data, samples)
    out = ingest(data, inbox)
    db = data / "mtabench.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        ids = dict(con.execute("select run_key, run_id from raw.runs").fetchall())
    assert set(ids) == {f"runs/{A_RUNS[0]}", A_RUNS[0]}
    assert len(set(ids.values())) == 2, ids
    assert ids[f"runs/{A_RUNS[0]}"] == A_RUNS[0]  # landed first: keeps its name
    assert ids[A_RUNS[0]].startswith(f"{A_RUNS[0]}@") and "renamed" in out
    out = ingest(data, samples)  # and the other way round: nothing moves
    with duckdb.connect(str(db), read_only=True) as con:
        assert dict(con.execute("select run_key, run_id from raw.runs").fetchall()) == ids


def sha256s(folder: Path) -> set[str]:
    return {hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()}


def landed_sha256s(db: Path, run_key: str) -> set[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select sha256 from raw.files where run_key = ?", [run_key]).fetchall()
    return {r[0] for r in rows}


def test_the_same_run_key_in_two_archives_is_not_taken_over(tmp_path):
    """Two archives holding one run key (the same folder name, other contents) would be one run
    whose rows each ingest replaces with its own: the second is refused with a file error
    naming the archive that holds it, the rest of its archive lands, and it lands once the
    first no longer holds the run."""
    data, db = tmp_path / "data", tmp_path / "data" / "mtabench.duckdb"
    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(SAMPLES / "runs" / A_RUNS[0], first / "run-1")
    shutil.copytree(SAMPLES / "runs" / A_RUNS[1], second / "run-1")
    shutil.copytree(SAMPLES / "runs" / A_RUNS[2], second / A_RUNS[2])
    ingest(data, first)
    out = ingest(data, second)
    assert f"! run-1: run 'run-1' is already landed from {first.resolve()}" in out
    assert "1 file error(s)" in out
    assert landed_sha256s(db, "run-1") == sha256s(first / "run-1")  # the first's rows stay
    assert landed_sha256s(db, A_RUNS[2]) == sha256s(second / A_RUNS[2])
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")} | {"MTABENCH_DATA": str(data)}
    scan = subprocess.run(
        [*MTABENCH, "scan", str(second)], cwd=REPO, env=env, capture_output=True, text=True, check=True
    ).stdout
    assert any(line.split()[:2] == ["conflict", "run-1"] for line in scan.splitlines()), scan
    out = ingest(data, first)  # the first archive's ingest does not see a conflict
    assert "error" not in out.replace("0 file error(s)", "")

    shutil.rmtree(first / "run-1")
    out = ingest(data, second)
    assert "already landed" not in out
    assert landed_sha256s(db, "run-1") == sha256s(second / "run-1")
    out = ingest(data, first)  # the first no longer holds it: it removes nothing of the second's
    assert landed_sha256s(db, "run-1") == sha256s(second / "run-1")
    assert rows_of_unknown_files(db) == {}
