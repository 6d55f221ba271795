"""What `mtabench run` tells the user: a renamed run, why a run failed, an unreadable run.toml."""

from __future__ import annotations

import logging
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
from conftest import REPO, SAMPLES

MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]


def _archive(tmp_path, *copies: tuple[str, str]):
    archive = tmp_path / "archive"
    for src, name in copies:
        shutil.copytree(SAMPLES / src, archive / name)
    return archive


def _run(archive, db, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MTABENCH_DATA": str(db.parent / "data")}
    return subprocess.run(
        [*MTABENCH, "run", str(archive), "--db", str(db), *extra],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )


def test_run_says_which_run_was_renamed_and_why_a_run_failed(tmp_path):
    archive = _archive(
        tmp_path,
        ("seed000/s11-elvtune", "s11-elvtune"),
        ("seed000/s11-elvtune", "s11-elvtune-copy"),  # same run.toml: same run_id
        ("runs/d0-postal-segfault-connlimit", "d0"),
    )
    db = tmp_path / "x.duckdb"
    proc = _run(archive, db)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with duckdb.connect(str(db), read_only=True) as con:
        renamed = con.execute(
            "select run_id from main.runs where run_id like 'seed000-s11-elvtune@%'"
        ).fetchall()
        failed = con.execute("select run_id, status_reason from main.runs where status = 'failed'").fetchall()
    assert len(renamed) == 1 and re.fullmatch(r"seed000-s11-elvtune@[0-9a-f]{6}", renamed[0][0])
    new_id = renamed[0][0]
    # the CLI says it while ingesting (stdout), as a warning (stderr) and in the closing notes
    assert re.search(rf"warning: run s11-elvtune(-copy)? -> {re.escape(new_id)}: .*already used", proc.stderr)
    notes = proc.stdout[proc.stdout.index("\nnotes:\n") :]
    assert f"{new_id}: run_id 'seed000-s11-elvtune' already used" in notes
    assert failed == [("d0-postal-segfault-connlimit", failed[0][1])] and failed[0][1]
    assert f"d0-postal-segfault-connlimit: failed: {failed[0][1]}" in notes
    # terse: one line per stage, the table, the notes; the details are in log files it names
    lines = proc.stdout.splitlines()
    table = [line for line in lines if line.startswith(("seed000-", "d0-postal"))]
    assert len(table) == 3
    assert len(lines) - len(table) <= 20, proc.stdout  # main printed ~100 (a line per dbt node)
    assert "Warning" not in proc.stdout + proc.stderr
    logs = re.findall(r"log: (\S+)", proc.stdout)
    assert [p.rsplit("/", 1)[1] for p in logs] == ["ingest.log", "dbt.log", "validate.log"]
    for log in logs:
        assert log.startswith(str(tmp_path / "data" / "logs")) and os.path.getsize(log) > 0
    # validate.log: a line per check; GX (and its PySpark FutureWarning) only for failing rows
    checked = Path(logs[2]).read_text()
    assert "PASS=" in Path(logs[1]).read_text()
    assert "marts.runs: " in checked and "landing.raw_files: " in checked, checked
    # the closing hint names the serving file and a command that works as printed
    hint = proc.stdout.rstrip().splitlines()[-1]
    command = shlex.split(hint.split("query it: ", 1)[1])
    serving = tmp_path / "serving" / "x.duckdb"
    assert command[-1] == str(serving)
    out = subprocess.run(
        [*command, "-csv", "-noheader", "-c", "select count(*) from runs"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) == len(list(archive.iterdir()))  # one run per folder here


def test_dag_ingest_task_logs_the_renamed_run(tmp_path, caplog):
    from mtabench.airflow import tasks as at

    inbox = _archive(
        tmp_path, ("seed000/s11-elvtune", "s11-elvtune"), ("seed000/s11-elvtune", "s11-elvtune-copy")
    )
    # the runs were copied in just now: whole at once (no settle time), as when copied long ago
    env = {
        "MTABENCH_INBOX": str(inbox),
        "MTABENCH_DATA": str(tmp_path / "data"),
        "MTABENCH_INBOX_SETTLE_S": "0",
    }
    settings = at.Settings.from_env(env)
    with caplog.at_level(logging.INFO, logger=at.log.name):
        outcomes = at.ingest_new(settings)  # the DAG's ingest task: scan and ingest, one process
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(
        re.search(r"seed000-s11-elvtune@[0-9a-f]{6}: run_id 'seed000-s11-elvtune' already used", w)
        for w in warnings
    ), warnings
    renamed = [o for o in outcomes.values() if o["run_id"].startswith("seed000-s11-elvtune@")]
    assert len(renamed) == 1 and "already used" in renamed[0]["warnings"][0], outcomes  # and its XCom


def test_broken_run_toml_is_named_and_the_run_dated_by_its_content(tmp_path):
    """An unreadable run.toml leaves the run on defaults, named in a warning and the notes;
    its date comes from its files' stamps (not their mtimes), so it validates and publishes."""
    archive = _archive(tmp_path, ("runs/c-throttled-queue-backlog", "c-broken"))
    manifest = archive / "c-broken" / "run.toml"
    text = manifest.read_text()
    assert '\nhostname = "vm"\n' in text
    manifest.write_text(text.replace('\nhostname = "vm"\n', '\nhostname = "vm\n'))  # unterminated string
    db = tmp_path / "x.duckdb"
    proc = _run(archive, db)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"warning: run c-broken -> c-broken: run.toml unreadable .*not valid TOML", proc.stderr)
    assert (
        "c-broken (c-broken/run.toml): unreadable, defaults used: run.toml is not valid TOML" in proc.stdout
    )
    with duckdb.connect(str(db), read_only=True) as con:
        run_date = con.execute("select run_date from raw.runs where run_key = 'c-broken'").fetchone()[0]
    assert str(run_date) == "2026-11-21"  # the day its start_utc names in the intact run.toml


def test_monitor_minutes_before_the_load_get_negative_offsets_and_publish(tmp_path):
    # The samplers start a few seconds before the load; a queue sample in the minute before
    # postal's first minute is a monitor minute, not an error (mtabench record's interrupted runs).
    archive = _archive(tmp_path, ("runs/a-baseline-t5", "early-monitor"))
    queue = archive / "early-monitor/queue.txt"
    header, *rows = queue.read_text().splitlines()
    queue.write_text("\n".join([header, "2026-11-21T22:04:58Z,0,1,0,0", *rows]) + "\n")
    db = tmp_path / "x.duckdb"
    proc = _run(archive, db, "--no-publish")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    with duckdb.connect(str(db), read_only=True) as con:
        first = con.execute(
            "select minute_offset, has_load_row, queue_sampled from main.minutes "
            "where run_id = 'a-baseline-t5' order by minute_at limit 2"
        ).fetchall()
    # 22:04 is the minute before postal's first row (labelled 22:06: the minute 22:05-22:06)
    assert first[0] == (-1, False, 1) and first[1][:2] == (0, True)
