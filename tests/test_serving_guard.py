"""The published serving file cannot be written through Superset, and publish owns it.

Three layers, each tested on its own: the DuckDB connection Superset opens (no Superset: the
settings alone stop a write), the statement check Superset runs before every query (DuckDB's
parser, no database), and the real Superset's SQL Lab REST API as a logged-in user (the session's
Superset, tests/superset_server.py). Then publish: a WAL left by a crashed read-write session is
not replayed onto a fresh publish, and a live read-write session makes publish refuse.
"""

from __future__ import annotations

import hashlib
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
import yaml
from conftest import REPO, SAMPLES

sys.path.insert(0, str(REPO / "dashboards"))
import serving_guard  # noqa: E402
from dataset_sql import render

from mtabench.cli.main import main  # noqa: E402


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _wal(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def hostile(serving: Path, scratch: Path) -> dict[str, str]:
    """Statements a SQL Lab user could send to write files or change the connection."""
    s, t = str(serving), str(scratch)
    csv = "(FORMAT csv, USE_TMP_FILE false)"
    return {
        "copy over the serving file": f"COPY (select 1 as a) TO '{s}' {csv}",
        "copy to its wal": f"COPY (select 1 as a) TO '{s}.wal' {csv}",
        "copy elsewhere": f"copy (select 1 as a) to '{t}/out.csv'",
        "export database": f"EXPORT DATABASE '{t}/export'",
        "attach": f"ATTACH '{t}/other.duckdb' AS other",
        "install": "INSTALL httpfs",
        "load": "LOAD httpfs",
        "set": "SET enable_external_access = true",
        "set threads": "SET threads = 1",
        "reset": "RESET disabled_filesystems",
        "pragma": "PRAGMA threads = 1",
        "checkpoint": "CHECKPOINT",
        "comment-prefixed copy": f"/* report */ -- weekly\n  CoPy (select 1 as a) tO '{s}' {csv}",
        "copy after a select": f"select 1; COPY (select 1 as a) TO '{s}' {csv}",
        "cte then copy": f"WITH x AS (select 1 as a) COPY x TO '{s}' {csv}",
        "copy of a cte query": f"COPY (WITH x AS (select 1 as a) select * from x) TO '{s}' {csv}",
    }  # fmt: skip


REVEALING = {
    "settings": "select * from duckdb_settings()",
    "databases": "select * from duckdb_databases()",
    "extensions": "select * from duckdb_extensions()",
    "database list": "select * from pragma_database_list",
    "pragma database_list": "PRAGMA database_list",
    "current_setting": "select current_setting('temp_directory')",
    "read_text": "select * from read_text('/etc/hostname')",
    "read_blob": "select * from read_blob('/etc/hostname')",
    "read_csv": "select * from read_csv('/etc/passwd')",
    "path as table": "select * from '/etc/passwd'",
    "glob": "select * from glob('/etc/*')",
    "system catalog": "select * from system.main.duckdb_settings",
    "query()": "select * from query('select 1')",
}


@pytest.fixture(scope="module")
def small_serving(tmp_path_factory) -> Path:
    """A DuckDB file with a `runs` table, the shape the connection tests need."""
    path = tmp_path_factory.mktemp("serving") / "mtabench.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("create table runs as select 'r' || i as run_id, 'label' as label from range(5) t(i)")
    return path


def _guarded(path: Path):
    """The connection Superset opens: serving_guard's connect args (what DB_CONNECTION_MUTATOR
    passes), then its lock (what the pool's connect hook runs)."""
    con = duckdb.connect(str(path), **serving_guard.connect_args({"config": {"lock_configuration": True}}))
    serving_guard.lock(con)
    return con


def test_the_connection_alone_refuses_every_write(small_serving, tmp_path):
    before = _sha(small_serving)
    # reads of the catalog and settings pass here: the statement check hides those
    files = {"read_text", "read_blob", "read_csv", "path as table", "glob"}
    statements = {**hostile(small_serving, tmp_path), **{k: REVEALING[k] for k in files}}
    with _guarded(small_serving) as con, _guarded(small_serving) as shared:  # one instance, twice
        for name, sql in statements.items():
            for c in (con, shared):
                try:
                    c.execute(sql).fetchall()
                    refused = False
                except duckdb.Error:
                    refused = True
                # a read-only file has nothing to checkpoint: that one may pass, writing nothing
                assert refused or name == "checkpoint", name
                assert _sha(small_serving) == before, name
                assert not _wal(small_serving).exists(), name
        assert con.execute("select count(*) from runs").fetchone()[0] == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_without_the_lock_duckdb_writes_the_open_file(small_serving, tmp_path):
    """Why the lock switches the file system off: external access off and a locked
    configuration still let COPY overwrite the open database file."""
    copy = tmp_path / "copy.duckdb"
    shutil.copyfile(small_serving, copy)
    config = {"enable_external_access": False, "lock_configuration": True}
    with duckdb.connect(str(copy), read_only=True, config=config) as con:
        con.execute(hostile(copy, tmp_path)["copy over the serving file"])
    assert copy.read_bytes() == b"a\n1\n", "DuckDB now refuses this itself: the lock may be simpler"


def test_a_connection_that_cannot_be_locked_is_refused(small_serving):
    config = {"enable_external_access": False, "lock_configuration": True}  # locked too early
    con = duckdb.connect(str(small_serving), read_only=True, config=config)
    with con, pytest.raises(serving_guard.UnlockedConnection):
        serving_guard.lock(con)


def test_connect_args_override_what_the_database_asks_for():
    asked = {"enable_external_access": True, "lock_configuration": True, "threads": 2}
    args = serving_guard.connect_args({"read_only": False, "config": asked})
    assert args["read_only"] is True and args["config"]["threads"] == 2
    assert args["config"]["enable_external_access"] is False and "lock_configuration" not in args["config"]


@pytest.mark.parametrize("name", [*hostile(Path("/s"), Path("/t")), *REVEALING])
def test_the_statement_check_refuses(name, tmp_path):
    sql = {**hostile(tmp_path / "mtabench.duckdb", tmp_path), **REVEALING}[name]
    assert serving_guard.refusal(sql), sql
    with pytest.raises(serving_guard.RefusedStatement):
        serving_guard.check(sql)


def test_the_statement_check_passes_every_dataset_and_plain_reads():
    datasets = sorted((REPO / "dashboards" / "datasets").rglob("*.yaml"))
    assert len(datasets) >= 5
    # as Superset runs them: their Jinja rendered first (ENABLE_TEMPLATE_PROCESSING)
    sqls = [render(yaml.safe_load(p.read_text())["sql"]) for p in datasets]
    sqls += [
        "select count(*) from runs",
        "describe runs",
        "show tables",
        "select * from main.compare_runs('a', 'b')",
        "with x as (select 1 as a) select a from x",
    ]
    for sql in sqls:
        assert serving_guard.refusal(sql) is None, sql[:200]


# --- the real Superset, as a logged-in user -------------------------------------------------


def _sqllab(superset, sql: str):
    db_id = superset.listing("database")[0]["id"]
    return superset.api().post(
        f"{superset.base}/api/v1/sqllab/execute/",
        json={"database_id": db_id, "sql": sql, "schema": "main", "runAsync": False, "select_as_cta": False},
        timeout=60,
    )


def _refused(r) -> bool:
    if r.status_code != 200:
        return True
    body = r.json()
    return body.get("status") != "success" or bool(body.get("errors"))


def test_sql_lab_cannot_write_the_serving_file(superset, tmp_path):
    serving = superset.serving
    with duckdb.connect(str(serving), read_only=True) as con:  # the oracle: the file, read directly
        runs = con.execute("select count(*) from main.runs").fetchone()[0]
    assert runs > 0
    ok = _sqllab(superset, "select count(*) as n from runs")
    assert ok.status_code == 200 and ok.json()["status"] == "success", ok.text[:500]
    assert ok.json()["data"] == [{"n": runs}]
    failures = []
    for name, sql in {**hostile(serving, tmp_path), **REVEALING}.items():
        before = _sha(serving)
        r = _sqllab(superset, sql)
        if not _refused(r):
            failures.append((name, r.status_code, r.text[:300]))
        if _sha(serving) != before:
            failures.append((name, "serving file changed"))
        if _wal(serving).exists():
            failures.append((name, "a .wal beside the serving file"))
    assert not failures, failures
    assert list(tmp_path.iterdir()) == []
    after = _sqllab(superset, "select count(*) as n from runs")
    assert after.status_code == 200 and after.json()["data"] == [{"n": runs}], after.text[:500]


# --- publish owns the serving file ----------------------------------------------------------

TAMPER = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
con.execute(sys.argv[2])
print("edited", flush=True)
time.sleep(600)
"""


def _editor(serving: Path, sql: str) -> subprocess.Popen:
    """A read-write session on the serving file that has made an edit (still in its WAL)."""
    serving.chmod(0o644)  # published read-only: the owner makes it writable first (root need not)
    proc = subprocess.Popen(
        [sys.executable, "-c", TAMPER, str(serving), sql], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "edited"
    return proc


def _labels(db: Path) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("select run_id, label from main.runs order by run_id").fetchall()


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> tuple[Path, Path]:
    """`mtabench run` of one run folder: its build file and its serving file."""
    tmp = tmp_path_factory.mktemp("publish-wal")
    archive = tmp / "archive"
    shutil.copytree(SAMPLES / "seed000" / "s11-elvtune", archive / "s11-elvtune")
    build = tmp / "data" / "mtabench.duckdb"
    assert main(["run", str(archive), "--db", str(build)]) == 0
    serving = build.parent / "serving" / "mtabench.duckdb"
    assert serving.is_file()
    return build, serving


@pytest.mark.parametrize("full", [False, True], ids=["incremental", "full"])
def test_publish_discards_a_crashed_sessions_wal(published, full, capsys):
    build, serving = published
    expected = _labels(build)
    assert expected and all(label != "TAMPERED" for _, label in expected)
    editor = _editor(serving, "update main.runs set label = 'TAMPERED'")
    editor.send_signal(signal.SIGKILL)
    editor.wait()
    wal = _wal(serving)
    assert wal.exists() and wal.stat().st_size > 0, "the killed session left no WAL"
    # what readers see before the fix: the WAL replayed on the served file
    assert {label for _, label in _labels(serving)} == {"TAMPERED"}
    capsys.readouterr()

    args = ["publish", "--db", str(build), "--serving-db", str(serving)]
    assert main([*args, "--full"] if full else args) == 0

    out = capsys.readouterr()
    assert serving.stat().st_mode & 0o777 == 0o444
    assert "(every table written)" in out.out  # the session may have checkpointed: no copy of it
    assert not wal.exists()
    assert _labels(serving) == expected
    assert f"removed a stale {wal.name}" in out.out and f"removed a stale {wal.name}" in out.err


def test_publish_refuses_while_a_session_writes_the_serving_file(published, capsys):
    build, serving = published
    before = _sha(serving)
    editor = _editor(serving, "select 1")
    try:
        capsys.readouterr()
        assert main(["publish", "--db", str(build), "--serving-db", str(serving), "--full"]) == 6
        assert f"{serving} is open read-write by pid {editor.pid}" in capsys.readouterr().err
        assert _sha(serving) == before
        assert not list(serving.parent.glob(".publishing-*"))
    finally:
        editor.kill()
        editor.wait()
    deadline = time.monotonic() + 10
    while _wal(serving).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert main(["publish", "--db", str(build), "--serving-db", str(serving)]) == 0
    assert _labels(serving) == _labels(build)


def test_make_serve_restarts_a_server_started_with_another_configuration(superset):
    """A running server keeps the configuration (and serving guard) it started with: `make
    serve` after an upgrade restarts it instead of reporting it as serving the new one."""
    served = superset.state / "config.sha256"
    pidfile = superset.state / "gunicorn.pid"
    stamp = superset.state / "import.sha256"
    had_stamp = stamp.exists()
    pid = pidfile.read_text().strip()
    served.write_text("a configuration from an earlier release\n")
    try:
        out = superset.sh("up", timeout=900).stdout
    finally:
        if not had_stamp:  # as the session found it: the first `make serve` imports
            stamp.unlink(missing_ok=True)
    assert "configuration changed since the server started; restarting it" in out, out
    assert pidfile.read_text().strip() != pid
    files = ("dashboards/superset_config.py", "dashboards/serving_guard.py", "envs/superset/uv.lock")
    loaded = hashlib.sha256(b"".join((REPO / f).read_bytes() for f in files)).hexdigest()
    assert served.read_text().strip() == loaded
    r = _sqllab(superset, "select count(*) as n from runs")
    assert r.status_code == 200 and r.json()["status"] == "success", r.text[:500]
    assert _refused(_sqllab(superset, hostile(superset.serving, superset.data)["copy over the serving file"]))
