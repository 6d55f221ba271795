"""Shared fixtures: the bundled samples, and one real pipeline run over them per session."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def raw_line_count(path: Path) -> int:
    """Lines in a file as `wc -l` counts them, plus a final line without newline."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("mtabench-data")
    old = os.environ.get("MTABENCH_DATA")
    os.environ["MTABENCH_DATA"] = str(d)
    yield d
    if old is None:
        os.environ.pop("MTABENCH_DATA", None)
    else:
        os.environ["MTABENCH_DATA"] = old


@pytest.fixture(scope="session")
def built_db(data_dir) -> Path:
    """`mtabench run` on samples/: ingest, dbt build, GX validate, publish."""
    from mtabench.cli import main

    db = data_dir / "mtabench.duckdb"
    assert main(["run", str(SAMPLES), "--db", str(db)]) == 0
    return db


@pytest.fixture()
def con(built_db):
    with duckdb.connect(str(built_db), read_only=True) as c:
        yield c
