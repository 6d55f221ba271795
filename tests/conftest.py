"""Shared fixtures: the bundled samples, and one real pipeline run over them per session."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def sink_record(name: str) -> list[list[str]]:
    """The SMTP sink's own record of a relay run (scripts/record/smtp_sink.py), kept with the
    run's oracles: `<utc> RCPT <addr> <code>` per RCPT reply and `<utc> DATA <id> <n> <bytes>
    rcpts=<addrs>` per accepted message."""
    text = gzip.decompress((FIXTURES / "oracles" / name / "sink.log.gz").read_bytes()).decode()
    return [ln.split() for ln in text.splitlines()]


def found(paths, what: str = "files") -> list[Path]:
    """A glob's result for parametrising, which must not be empty: a moved folder fails at
    collection instead of turning its tests into a silent, empty parametrisation."""
    paths = sorted(paths)
    assert paths, f"the glob for {what} found nothing: was a folder moved?"
    return paths


def raw_line_count(path: Path) -> int:
    """Lines in a file as `wc -l` counts them, plus a final line without newline."""
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def debian_tool(name: str, package: str | None = None) -> str:
    """Path of a Debian tool the tests compare against; installs it (CI runs as root) or fails."""
    path = shutil.which(name)
    if path is None:
        subprocess.run(["apt-get", "install", "-y", "-qq", package or name], check=False, capture_output=True)
        path = shutil.which(name)
    assert path, f"{name} is needed: apt-get install {package or name} (scripts/setup.sh does it)"
    return path


def airflow_env(
    home: Path, strip: tuple[str, ...] = ("AIRFLOW", "VIRTUAL_ENV"), **extra: str
) -> dict[str, str]:
    """Set up the Airflow environment (idempotent) and return its variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(strip)}
    env.update(MTABENCH_AIRFLOW_HOME=str(home), **extra)
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "airflow_env.sh"), "env", "-0"],
        env=env,
        capture_output=True,
        check=False,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return dict(kv.split("=", 1) for kv in proc.stdout.decode().split("\0") if "=" in kv)


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory) -> Path:
    """One Airflow home (metadata DB, pool, secrets) per worker, for the tests that run Airflow's
    CLI without its services: set up once (airflow_env), each module brings its own paths."""
    return tmp_path_factory.mktemp("airflow") / "airflow_home"


@pytest.fixture
def landing_con():
    """An in-memory landing schema, as the loader creates it."""
    from ingest.landing import ensure_schema

    con = duckdb.connect()
    ensure_schema(con)
    yield con
    con.close()


def land_file(con, parser, path: Path, file_id: int = 1, **ctx):
    """Land one file in its own transaction, as the loader does; returns its line counts."""
    from ingest.landing import land_file as land
    from ingest.parsers.base import ParseContext
    from ingest.source import FileSource

    con.execute("begin")
    counts = land(con, parser, file_id, FileSource(path, path.name), ParseContext(**ctx))
    con.execute("commit")
    return counts


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


@pytest.fixture(scope="session", autouse=True)
def _data_dir_from_the_first_test(data_dir) -> None:
    """MTABENCH_DATA is set before any test runs, not from the first that asks for data_dir:
    a command run in-process with only `--db` writes its dbt target, logs and landing under
    $MTABENCH_DATA, else under the repository's data/, which parallel workers would share."""


@pytest.fixture(scope="session")
def built_db(data_dir) -> Path:
    """`mtabench run` on samples/: ingest, dbt build, GX validate, publish."""
    from mtabench.cli.main import main

    db = data_dir / "mtabench.duckdb"
    assert main(["run", str(SAMPLES), "--db", str(db)]) == 0
    return db


@pytest.fixture()
def con(built_db):
    with duckdb.connect(str(built_db), read_only=True) as c:
        yield c


# one real S3-compatible server (`s3_server`, `s3_env`) and one real Superset (`superset`) per
# session, for the tests that take them
from s3_server import s3_env, s3_server  # noqa: E402, F401
from superset_server import superset  # noqa: E402, F401

# the run fails when it changed the working tree (tracked files, or new files outside .gitignore)
from tree_clean import pytest_sessionfinish, pytest_sessionstart  # noqa: E402, F401

# under pytest-xdist: which tests share a worker, and which groups start first
from xdist_groups import (  # noqa: E402, F401
    pytest_collection_modifyitems,
    pytest_configure_node,
    pytest_xdist_make_scheduler,
)


@pytest.fixture()
def serving_con(built_db, data_dir):
    """The published serving file (what Superset reads): the marts and compare_runs()."""
    with duckdb.connect(str(data_dir / "serving" / "mtabench.duckdb"), read_only=True) as c:
        yield c
