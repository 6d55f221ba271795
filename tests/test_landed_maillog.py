"""Messages and counts per minute land with the lines, in the parse pass (ingest/maillog_run.py):
raw.maillog_messages (a run's messages, each under the file of its first line) and
raw.maillog_minutes (each file's counts per minute).

Expected figures come from the raw files: received lines counted with the regex of
tests/test_messages_instances.py (pflogsumm's definition), reused queue ids from their
`removed` lines; a message spanning a run's files from the queue ids found in both.
"""

from __future__ import annotations

import gzip
import shutil
from collections import Counter
from pathlib import Path

import duckdb
from conftest import SAMPLES
from test_messages_instances import RECEIVED, REMOVED

from ingest.landing import delete_file_rows, ensure_schema, land_file, refresh_views
from ingest.loader import ingest_archive
from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import MaillogParser
from ingest.source import FileSource


def _received_and_reused(path: Path) -> tuple[int, int]:
    """Received lines, and later uses of a queue id (a queue id used n times has n `removed` lines)."""
    lines = gzip.decompress(path.read_bytes()).splitlines()
    removed = Counter(m.group(1) for line in lines if (m := REMOVED.search(line)))
    return sum(bool(RECEIVED.search(line)) for line in lines), sum(n - 1 for n in removed.values())


def test_each_maillog_lands_its_messages_and_minutes_with_its_lines(tmp_path):
    """As many messages as the file has received lines (a reused queue id's later uses apart),
    its minutes' received counts adding up to the same; landing the file again replaces
    them; removing the file removes them."""
    log = SAMPLES / "runs" / "a-baseline-t5" / "maillog.gz"
    expected, reused = _received_and_reused(log)
    assert reused > 0
    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        ensure_schema(con)
        for _ in range(2):  # re-ingesting the same file changes nothing
            con.execute("begin")
            delete_file_rows(con, 7)
            land_file(con, MaillogParser(), 7, FileSource(log, log.name), ParseContext(year=2026))
            con.execute("commit")
            refresh_views(con)
            assert con.execute(
                "select count(*), count(*) - count(distinct queue_id), sum(delivered_recipients) > 0 "
                "from raw.maillog_messages where file_id = 7 and has_lines = 1"
            ).fetchone() == (expected, reused, True)
            rows, minutes, received, delivered = con.execute(
                "select count(*), count(distinct minute_at), sum(received), sum(delivered) "
                "from raw.maillog_minutes where file_id = 7"
            ).fetchone()
            assert rows == minutes > 0 and received == expected and delivered > 0
            # the minutes count what the lines say they count as
            assert con.execute(
                "select count(*) from raw.maillog where counts_as = 'received'"
            ).fetchone() == (expected,)
        first = con.execute("select min(first_line_no) from raw.maillog_messages").fetchone()[0]
        assert (
            first
            == con.execute("select min(line_no) from raw.maillog where queue_id is not null").fetchone()[0]
        )
        con.execute("begin")
        delete_file_rows(con, 7)
        con.execute("commit")
        assert con.execute("select count(*) from raw.maillog_messages").fetchone() == (0,)
        assert con.execute("select count(*) from raw.maillog_minutes").fetchone() == (0,)
        assert con.execute("select count(*) from raw.parquet_files").fetchone() == (0,)


def test_a_maillog_without_queue_ids_lands_no_messages(tmp_path):
    """No message, and one minute that counts its one line and nothing received."""
    log = tmp_path / "maillog"
    log.write_text("Nov 21 22:04:34 mx1 postfix/smtpd[1]: connect from a[1.2.3.4]:25\n")
    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        ensure_schema(con)
        con.execute("begin")
        land_file(con, MaillogParser(), 3, FileSource(log, log.name), ParseContext(year=2026))
        con.execute("commit")
        refresh_views(con)
        assert con.execute(
            "select table_name, rows from raw.parquet_files where table_name <> 'maillog' order by 1"
        ).fetchall() == [("maillog_minutes", 1)]
        assert con.execute("select count(*) from raw.maillog_messages").fetchone() == (0,)
        assert con.execute("select lines, received from raw.maillog_minutes").fetchall() == [(1, 0)]


def _queue_ids(path: Path) -> set[bytes]:
    ids = set()
    for line in gzip.decompress(path.read_bytes()).splitlines():
        parts = line.split(b": ", 2)
        if len(parts) == 3 and parts[1].isalnum() and len(parts[1]) >= 6 and parts[1].isupper():
            ids.add(parts[1])
    return ids


def test_a_message_spanning_a_runs_files_is_one_message(tmp_path):
    """c-throttled's queue ids span its maillog and its drain log (named so it sorts first):
    the files are one stream in time order, so each such message is one row, under the
    maillog (its first line's file); a changed file lands the run's files again."""
    run = tmp_path / "archive" / "c-throttled"
    shutil.copytree(SAMPLES / "runs" / "c-throttled-queue-backlog", run)
    main, drain = run / "maillog.gz", run / "maillog.drain.gz"
    spanning = _queue_ids(main) & _queue_ids(drain)
    assert len(spanning) > 10
    db = tmp_path / "data" / "x.duckdb"
    for _ in range(2):
        report = ingest_archive(tmp_path / "archive", db, tmp_path / "work")
        assert not report.errors
        with duckdb.connect(str(db), read_only=True) as con:
            files = dict(
                con.execute("select regexp_extract(path, '[^/]+$'), file_id from raw.files").fetchall()
            )
            ids = ", ".join(repr(q.decode()) for q in spanning)
            rows = con.execute(
                "select queue_id, first_file_id, count(*) over (partition by queue_id) "
                f"from raw.maillog_messages where has_lines = 1 and queue_id in ({ids})"
            ).fetchall()
        assert {r[0].encode() for r in rows} == spanning
        assert all(n == 1 and fid == files["maillog.gz"] for _, fid, n in rows)
    # the drain log changed: both files land again, and the messages still span them
    data = gzip.decompress(drain.read_bytes()) + b"Nov 21 23:59:59 vm postfix/qmgr[1]: FEDCBA9876: removed\n"
    drain.write_bytes(gzip.compress(data))
    ingest_archive(tmp_path / "archive", db, tmp_path / "work")
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute(
            "select count(distinct first_file_id) from raw.maillog_messages where queue_id = 'FEDCBA9876'"
        ).fetchone() == (1,)
        one = min(spanning).decode()
        assert con.execute(
            f"select count(*) from raw.maillog_messages where has_lines = 1 and queue_id = '{one}'"
        ).fetchone() == (1,)


def test_a_bad_maillog_beside_a_good_one(tmp_path):
    """A truncated gzip rotated log is its file's error; the run's other maillog lands with
    its messages, and an ingest again changes nothing."""
    run = tmp_path / "archive" / "r"
    run.mkdir(parents=True)
    good = SAMPLES / "runs" / "a-baseline-t5" / "maillog.gz"
    shutil.copy(good, run / "maillog.gz")
    (run / "maillog.1.gz").write_bytes(good.read_bytes()[:5000])
    db = tmp_path / "data" / "x.duckdb"
    expected, _ = _received_and_reused(good)
    for status in ("error", "unchanged"):  # as any file: its error stays on record, not parsed again
        report = ingest_archive(tmp_path / "archive", db, tmp_path / "work")
        by_name = {Path(f.path).name: f for f in report.files}
        assert by_name["maillog.1.gz"].status == status and "gzip" in by_name["maillog.1.gz"].message
        assert by_name["maillog.gz"].status in ("loaded", "unchanged")
        with duckdb.connect(str(db), read_only=True) as con:
            assert con.execute(
                "select count(*) from raw.maillog_messages where has_lines = 1"
            ).fetchone() == (expected,)
