"""Rows computed from each landed maillog file by the ingest's derive step (ingest/derive.py):
raw.maillog_messages (its messages) and raw.maillog_minutes (its counts per minute).
`messages` reads the landed messages of a run with one maillog file holding messages;
int_maillog__minutes sums the landed counts; the lines serve the rest (macros/maillog.sql).

Expected figures come from the raw files: received lines counted with the regex of
tests/test_messages_instances.py (pflogsumm's definition), and the routing from which sample
folders hold more than one `maillog*` file. The line path (`landed_maillog: false`) is the
other implementation the landed rows are compared with, row for row.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import duckdb
from conftest import SAMPLES, raw_line_count
from test_messages_instances import RECEIVED, REMOVED

from ingest import arrow_landing, derive, maillog_messages, maillog_minutes
from ingest.landing import delete_file_rows, ensure_schema, land_file, refresh_views
from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import MaillogParser
from ingest.source import FileSource
from mtabench.dbt import run_dbt
from mtabench.paths import Paths

DIFF = "select count(*) from (from {} except all from {})"
LINE_PATH = re.compile(r"and not list_contains\(\[([0-9, ]*)\]::bigint\[\], file_id\)")
# the models that read landed rows, and what they read
MODELS = {"messages": "main.messages", "int_maillog__minutes": "intermediate.int_maillog__minutes"}


def _received_and_reused(path: Path) -> tuple[int, int]:
    """Received lines, and later uses of a queue id (a queue id used n times has n `removed` lines)."""
    lines = gzip.decompress(path.read_bytes()).splitlines()
    removed = Counter(m.group(1) for line in lines if (m := REMOVED.search(line)))
    return sum(bool(RECEIVED.search(line)) for line in lines), sum(n - 1 for n in removed.values())


def _copy(built_db: Path, tmp_path: Path) -> tuple[Path, Paths]:
    """The session's build DB in a folder of its own (its Parquet parts read where they are)."""
    db = tmp_path / "data" / built_db.name  # its views name the catalog after the file
    db.parent.mkdir()
    shutil.copy(built_db, db)
    return db, Paths(db=db, data_dir=db.parent)


def _rebuild(paths: Paths, **dbt_vars) -> str:
    """The models that read landed rows rebuilt in full; returns messages' compiled SQL."""
    args = ["run", "--select", "int_maillog__line_messages", *MODELS, "--full-refresh"]
    run_dbt(paths, [*args, "--vars", json.dumps(dbt_vars)] if dbt_vars else args, lambda _: None)
    compiled = paths.data_dir / "dbt_target" / "compiled" / "mtabench" / "models" / "marts" / "messages.sql"
    return compiled.read_text()


def _differences(db: Path, built_db: Path) -> dict[str, tuple[int, int, int]]:
    """Per model: rows only here, rows only in the session's build, rows here."""
    out = {}
    with duckdb.connect(str(db), read_only=True) as con:
        con.execute(f"attach '{built_db}' as one (read_only)")
        for model, rel in MODELS.items():
            out[model] = (
                con.execute(DIFF.format(rel, f"one.{rel}")).fetchone()[0],
                con.execute(DIFF.format(f"one.{rel}", rel)).fetchone()[0],
                con.execute(f"select count(*) from {rel}").fetchone()[0],
            )
    return out


def _assert_same(db: Path, built_db: Path) -> None:
    diffs = _differences(db, built_db)
    assert {m: d[:2] for m, d in diffs.items()} == dict.fromkeys(MODELS, (0, 0))
    assert all(d[2] > 0 for d in diffs.values()), diffs


def _file_ids(db: Path, paths: list[str]) -> set[int]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select file_id, path from raw.files").fetchall()
    return {fid for fid, p in rows if p in paths}


def test_each_maillog_lands_its_messages_and_minutes_once(tmp_path):
    """A part of each per file: as many messages as the file has received lines, a reused
    queue id's later messages numbered from 2, and its minutes' received counts adding up to
    the same; landing the file again replaces them; removing the file removes them."""
    log = SAMPLES / "runs" / "a-baseline-t5" / "maillog.gz"
    expected, reused = _received_and_reused(log)
    assert reused > 0
    db = tmp_path / "x.duckdb"
    with duckdb.connect(str(db)) as con:
        ensure_schema(con)
        for _ in range(2):  # re-ingesting the same file changes nothing
            con.execute("begin")
            delete_file_rows(con, 7)
            land_file(con, MaillogParser(), 7, FileSource(log, log.name), ParseContext(year=2026))
            con.execute("commit")
            assert derive.pending(con) == [7]
            assert derive.derive(con) == (1, [])
            refresh_views(con)
            assert derive.pending(con) == []
            assert con.execute(
                "select count(*), sum(rows) from raw.parquet_files where table_name = 'maillog_messages'"
            ).fetchone() == (1, expected)
            assert con.execute(
                "select count(*), count(*) filter (where message_instance > 1), "
                "sum(delivered_recipients) > 0 from raw.maillog_messages where file_id = 7"
            ).fetchone() == (expected, reused, True)
            rows, minutes, received, delivered = con.execute(
                "select count(*), count(distinct minute_at), sum(received), sum(delivered) "
                "from raw.maillog_minutes where file_id = 7"
            ).fetchone()
            assert rows == minutes > 0 and received == expected and delivered > 0
        first = con.execute("select min(first_line_no) from raw.maillog_messages").fetchone()[0]
        assert (
            first
            == con.execute(
                "select min(line_no) from raw.maillog where queue_id is not null and kind = 'client'"
            ).fetchone()[0]
        )
        con.execute("begin")
        delete_file_rows(con, 7)
        con.execute("commit")
        assert con.execute("select count(*) from raw.maillog_messages").fetchone() == (0,)
        assert con.execute("select count(*) from raw.maillog_minutes").fetchone() == (0,)
        assert con.execute("select count(*) from raw.parquet_files").fetchone() == (0,)


def test_a_maillog_without_queue_ids_lands_an_empty_messages_part(tmp_path):
    """A part with no rows still says the file's messages were computed; its one minute
    counts its one line and nothing received."""
    log = tmp_path / "maillog"
    log.write_text("Nov 21 22:04:34 mx1 postfix/smtpd[1]: connect from a[1.2.3.4]:25\n")
    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        ensure_schema(con)
        con.execute("begin")
        land_file(con, MaillogParser(), 3, FileSource(log, log.name), ParseContext(year=2026))
        con.execute("commit")
        assert derive.derive(con) == (1, [])
        refresh_views(con)
        assert derive.pending(con) == []
        assert con.execute(
            "select table_name, rows from raw.parquet_files where table_name <> 'maillog' order by 1"
        ).fetchall() == [("maillog_messages", 0), ("maillog_minutes", 1)]
        assert con.execute("select count(*) from raw.maillog_messages").fetchone() == (0,)
        assert con.execute("select lines, received from raw.maillog_minutes").fetchall() == [(1, 0)]


def test_a_failed_derive_keeps_the_file_and_is_tried_again(tmp_path, monkeypatch):
    """A derive that fails is rolled back for its file alone: the lines stay landed, no part
    of either table is listed, the error names the file, and the next derive tries again."""
    log = SAMPLES / "runs" / "d0-postal-segfault-connlimit" / "maillog.gz"
    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        ensure_schema(con)
        con.execute("begin")
        land_file(con, MaillogParser(), 5, FileSource(log, log.name), ParseContext(year=2026))
        con.execute("commit")
        con.execute(
            "insert into raw.files (file_id, run_key, path, status) "
            "values (5, 'r', 'd0/maillog.gz', 'loaded')"
        )

        def broken(con, file_id, view=True):
            raise OSError("disk full")

        monkeypatch.setattr(maillog_minutes, "land", broken)
        done, errors = derive.derive(con)
        assert done == 0 and len(errors) == 1 and "d0/maillog.gz" in errors[0] and "disk full" in errors[0]
        assert con.execute("select table_name from raw.parquet_files").fetchall() == [("maillog",)]
        assert con.execute("select count(*) from raw.maillog").fetchone()[0] == raw_line_count(log)
        assert derive.pending(con) == [5]
        monkeypatch.undo()
        assert derive.derive(con) == (1, [])
        assert derive.pending(con) == []


def test_runs_read_landed_rows_unless_their_queue_ids_span_files(built_db, tmp_path):
    """A full build takes every run's messages from the landed rows, except the runs whose
    folder holds more than one maillog (c-throttled's maillog and drain log): the same rows."""
    spanning = [
        str(p.relative_to(SAMPLES))
        for run in SAMPLES.glob("runs/*")
        if len(logs := sorted(run.glob("maillog*"))) > 1
        for p in logs
    ]
    assert len(spanning) >= 2
    db, paths = _copy(built_db, tmp_path)
    found = LINE_PATH.search(_rebuild(paths))
    assert found, "messages did not read the landed messages"
    assert {int(i) for i in found.group(1).split(",")} == _file_ids(db, spanning)
    _assert_same(db, built_db)


def test_landed_rows_equal_the_line_path(built_db, tmp_path):
    """`messages` and int_maillog__minutes from the lines alone (`landed_maillog: false`)
    equal the session's build."""
    db, paths = _copy(built_db, tmp_path)
    assert "landed_messages" not in _rebuild(paths, landed_maillog=False)
    compiled = paths.data_dir / "dbt_target" / "compiled" / "mtabench" / "models" / "intermediate"
    assert "landed_counts" not in (compiled / "int_maillog__minutes.sql").read_text()
    _assert_same(db, built_db)


def test_a_file_not_derived_takes_the_line_path(built_db, tmp_path):
    """A maillog not derived (ingest/derive.py failed or did not run) has no messages or
    minutes part: its run's rows come from its lines, the same rows."""
    db, paths = _copy(built_db, tmp_path)
    (baseline,) = _file_ids(db, ["runs/a-baseline-t5/maillog.gz"])
    with duckdb.connect(str(db)) as con:
        con.execute(
            "delete from raw.parquet_files where table_name in ('maillog_messages', 'maillog_minutes') "
            f"and file_id = {baseline}"
        )
        for module in (maillog_messages, maillog_minutes):
            arrow_landing.rebuild_view(con, module.TABLE, module.COLUMNS)
    found = LINE_PATH.search(_rebuild(paths))
    assert found and baseline in {int(i) for i in found.group(1).split(",")}
    compiled = paths.data_dir / "dbt_target" / "compiled" / "mtabench" / "models" / "intermediate"
    assert str(baseline) in (compiled / "int_maillog__minutes.sql").read_text()
    _assert_same(db, built_db)
