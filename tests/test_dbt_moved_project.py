"""A data folder whose dbt parse was made from a checkout at another path (the checkout moved,
or another one used this data folder): dbt reuses its saved parse, whose seeds name the old
folder. mtabench discards a parse of another project (mtabench/pipeline/dbt.py)."""

from __future__ import annotations

import shutil

import pytest

from ingest.loader import ingest_archive
from mtabench.paths import DBT_PROJECT, Paths
from mtabench.pipeline import dbt as mdbt


def _landed(tmp_path) -> Paths:
    """An empty landing (dbt's hooks read the ledger tables) in a data folder of its own."""
    paths = Paths(db=tmp_path / "data" / "mtabench.duckdb", data_dir=tmp_path / "data")
    (tmp_path / "archive").mkdir()
    ingest_archive(tmp_path / "archive", paths.db, paths.work_dir)
    return paths


def _seed(paths: Paths, project, monkeypatch) -> list[str]:
    monkeypatch.setattr(mdbt, "DBT_PROJECT", project)
    lines: list[str] = []
    mdbt.run_dbt(paths, ["seed", "--select", "student_t"], progress=lines.append)
    return lines


def test_a_moved_project_is_parsed_again(tmp_path, monkeypatch):
    paths = _landed(tmp_path)
    old = tmp_path / "old" / "dbt_project"
    shutil.copytree(DBT_PROJECT, old, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    _seed(paths, old, monkeypatch)
    assert (paths.data_dir / "dbt_target" / "partial_parse.msgpack").exists()

    new = tmp_path / "new" / "dbt_project"
    new.parent.mkdir()
    old.rename(new)  # the checkout moved: the old path is gone
    lines = _seed(paths, new, monkeypatch)  # raises DbtFailed if the seed was read from `old`
    rows = len((new / "seeds" / "student_t.csv").read_text().splitlines()) - 1  # less the header
    assert any("OK loaded seed file reference.student_t" in ln and f"INSERT {rows} " in ln for ln in lines)
    assert (paths.data_dir / "dbt_target" / mdbt.PROJECT_STAMP).read_text() == str(new.resolve())


def test_without_the_stamp_dbt_reads_the_seed_from_the_old_folder(tmp_path, monkeypatch):
    """What the stamp prevents, shown with dbt itself: the saved parse kept and the project moved."""
    paths = _landed(tmp_path)
    old = tmp_path / "old" / "dbt_project"
    shutil.copytree(DBT_PROJECT, old, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    _seed(paths, old, monkeypatch)
    new = tmp_path / "new" / "dbt_project"
    new.parent.mkdir()
    old.rename(new)
    monkeypatch.setattr(mdbt, "forget_parse_of_another_project", lambda target_dir: None)
    with pytest.raises(mdbt.DbtFailed):
        _seed(paths, new, monkeypatch)
