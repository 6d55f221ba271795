"""raw.maillog as per-file Parquet behind a view: crash-safe, no stale files, works empty."""

from __future__ import annotations

import duckdb

from ingest.landing import delete_file_rows, ensure_schema, land_file
from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import MaillogParser
from ingest.source import FileSource

LINES = [
    "Nov 21 22:04:34 mx1 postfix/smtpd[1]: connect from a[1.2.3.4]:25",
    "Nov 21 22:04:35 mx1 postfix/qmgr[2]: ABCDEF123: removed",
    "",
]


def _land(con, path, fid=7):
    c = land_file(con, MaillogParser(), fid, FileSource(path, path.name), ParseContext(year=2026))
    return c


def test_view_works_without_any_maillog(tmp_path):
    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        ensure_schema(con)
        assert con.execute("select count(*), count(client_ip) from raw.maillog").fetchone() == (0, 0)
        assert con.execute(
            "select data_type from information_schema.columns where table_name = 'maillog' "
            "and column_name = 'ts'"
        ).fetchone() == ("TIMESTAMP",)


def test_rollback_leaves_the_view_and_sweeps_the_orphan(tmp_path):
    log = tmp_path / "maillog"
    log.write_text("\n".join(LINES) + "\n")
    db = tmp_path / "x.duckdb"
    with duckdb.connect(str(db)) as con:
        ensure_schema(con)
        con.execute("begin")
        c = _land(con, log)
        con.execute("commit")
        assert (c.total, c.parsed, c.noise) == (3, 2, 1)
        assert con.execute("select line_no, kind, client_ip from raw.maillog order by 1").fetchall() == [
            (1, "connect", "1.2.3.4"),
            (2, "removed", None),
        ]
        first = set((tmp_path / "x.duckdb.parquet").iterdir())
        assert len(first) == 1
        # a changed file whose landing never commits (a crash): the committed view is unchanged
        log.write_text(LINES[1] + "\n")
        con.execute("begin")  # as the loader: one transaction per file
        delete_file_rows(con, 7)
        _land(con, log)
        assert con.execute("select count(*) from raw.maillog").fetchone() == (1,)
        con.execute("rollback")
        assert con.execute("select count(*) from raw.maillog").fetchone() == (2,)
        assert len(set((tmp_path / "x.duckdb.parquet").iterdir())) == 2  # the orphan, unlisted
    with duckdb.connect(str(db)) as con:
        ensure_schema(con)  # next ingest: files no committed row names are removed
        assert set((tmp_path / "x.duckdb.parquet").iterdir()) == first
        assert con.execute("select count(*) from raw.maillog").fetchone() == (2,)
        # the file removed: its rows leave with the commit
        con.execute("begin")
        delete_file_rows(con, 7)
        con.execute("commit")
        assert con.execute("select count(*) from raw.maillog").fetchone() == (0,)
        assert con.execute("select count(*) from raw.noise").fetchone() == (0,)
