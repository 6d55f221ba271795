"""Run ids are the archive's own: the same archive gives the same ids whatever the landing
held before, and a clash is settled by run-key order, naming both folders."""

from __future__ import annotations

import shutil

import duckdb
from conftest import SAMPLES

from ingest.loader import ingest_archive

BASE = SAMPLES / "runs/a-baseline-t5"
SMALL = ("run.toml", "postal.csv", "queue.txt", "postconf-n.txt", "vmstat.txt")


def _run(folder, run_id: str) -> None:
    folder.mkdir(parents=True)
    for name in SMALL:
        shutil.copyfile(BASE / name, folder / name)
    text = (folder / "run.toml").read_text().replace('run_id = "a-baseline-t5"', f'run_id = "{run_id}"')
    (folder / "run.toml").write_text(text)


def _ids(db) -> dict[str, str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return dict(con.execute("select run_key, run_id from raw.runs").fetchall())


def test_clashing_run_ids_do_not_depend_on_the_landings_history(tmp_path):
    archive = tmp_path / "archive"
    _run(archive / "a-baseline-t5", "a-baseline-t5")
    # the newcomer sorts first: on an existing landing it used to be renamed, on a fresh one
    # it took the id and the real run was renamed
    ingest_archive(archive, tmp_path / "existing.duckdb", tmp_path / "work1")
    _run(archive / "0-copy", "a-baseline-t5")
    report = ingest_archive(archive, tmp_path / "existing.duckdb", tmp_path / "work1")
    fresh = ingest_archive(archive, tmp_path / "fresh.duckdb", tmp_path / "work2")
    existing_ids, fresh_ids = _ids(tmp_path / "existing.duckdb"), _ids(tmp_path / "fresh.duckdb")
    assert existing_ids == fresh_ids
    # run-key order decides: "0-copy" < "a-baseline-t5"
    assert fresh_ids["0-copy"] == "a-baseline-t5"
    assert fresh_ids["a-baseline-t5"].startswith("a-baseline-t5@")
    for rep in (report, fresh):
        warnings = [w for r in rep.runs for w in r.warnings if "already used" in w]
        assert len(warnings) == 1 and "'0-copy'" in warnings[0] and "'a-baseline-t5'" in warnings[0]
    # and again: nothing moves
    ingest_archive(archive, tmp_path / "existing.duckdb", tmp_path / "work1")
    assert _ids(tmp_path / "existing.duckdb") == fresh_ids
