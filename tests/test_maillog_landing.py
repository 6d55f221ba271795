"""raw.maillog as per-file Parquet behind a view: crash-safe, no stale files, works empty."""

from __future__ import annotations

import duckdb
import pytest

from ingest.landing import delete_file_rows, ensure_schema, land_file
from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import MaillogParser
from ingest.source import FileSource

LINES = [
    "Nov 21 22:04:34 mx1 postfix/smtpd[1]: connect from a[1.2.3.4]:25",
    "Nov 21 22:04:35 mx1 postfix/qmgr[2]: ABCDEF123: removed",
    "",
]


def _parts(store) -> set:
    """The Parquet parts under a landing's store (in its files' partition folders)."""
    return {p for p in store.rglob("*") if p.is_file()}


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
        first = _parts(tmp_path / "x.duckdb.parquet")
        # one part each: the lines, their message, the counts per minute (one pass)
        tables = sorted(p.parent.parent.name for p in first)
        assert tables == ["maillog", "maillog_messages", "maillog_minutes"]
        # a changed file whose landing never commits (a crash): the committed view is unchanged
        log.write_text(LINES[1] + "\n")
        con.execute("begin")  # as the loader: one transaction per file
        delete_file_rows(con, 7)
        _land(con, log)
        assert con.execute("select count(*) from raw.maillog").fetchone() == (1,)
        con.execute("rollback")
        assert con.execute("select count(*) from raw.maillog").fetchone() == (2,)
        assert len(_parts(tmp_path / "x.duckdb.parquet")) == 6  # the orphans, unlisted
    with duckdb.connect(str(db)) as con:
        ensure_schema(con)  # next ingest: files no committed row names are removed
        assert _parts(tmp_path / "x.duckdb.parquet") == first
        assert con.execute("select count(*) from raw.maillog").fetchone() == (2,)
        # the file removed: its rows leave with the commit
        con.execute("begin")
        delete_file_rows(con, 7)
        con.execute("commit")
        assert con.execute("select count(*) from raw.maillog").fetchone() == (0,)
        assert con.execute("select count(*) from raw.noise").fetchone() == (0,)


def _blocks_of(path, size):
    from ingest.parsers.maillog import parse_stream, read_blocks

    fh = path.open("rb")
    return parse_stream(read_blocks(fh, size), 2026, ParseContext(year=2026), threads=2)


def test_a_file_in_many_blocks_lands_as_parts_in_line_order(tmp_path):
    """Each block is its own Parquet part, written by parallel writers; the view lists a
    file's parts in block order, so line order holds, and a failing block leaves no part."""
    from ingest import arrow_landing
    from ingest.landing import PROVENANCE
    from ingest.parsers.maillog import COLUMNS

    lines = [
        f"Nov 21 22:{i // 60:02d}:{i % 60:02d} mx1 postfix/qmgr[2]: ABC{i:06d}: removed" for i in range(600)
    ]
    lines[250] = "junk that is no log line"  # quarantined, from a middle block
    log = tmp_path / "maillog"
    log.write_text("\n".join(lines) + "\n")
    ddl = f"{PROVENANCE}, {COLUMNS}"
    store = tmp_path / "x.duckdb.parquet"
    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        ensure_schema(con)
        con.execute("begin")
        c = arrow_landing.land(con, 7, "maillog", ddl, _blocks_of(log, 1000))  # ~15 lines a block
        con.execute("commit")
        assert (c.total, c.parsed, c.quarantined) == (600, 599, 1)
        parts = sorted(_parts(store))
        assert len(parts) > 20, parts  # one part per block
        got = con.execute("select line_no, queue_id from raw.maillog").fetchall()  # no order by
        want = [(i + 1, f"ABC{i:06d}") for i in range(600) if i != 250]
        assert got == want
        assert con.execute("select line_no from raw.quarantine").fetchall() == [(251,)]

        def failing():
            for n, block in enumerate(_blocks_of(log, 1000)):
                if n == 30:
                    raise OSError("disk gone")
                yield block

        con.execute("begin")
        try:
            arrow_landing.land(con, 8, "maillog", ddl, failing())
        except OSError:
            con.execute("rollback")
        else:
            raise AssertionError("the failing block did not fail the landing")
        assert sorted(_parts(store)) == parts  # no part, no temporary file left
        assert con.execute("select count(*) from raw.maillog").fetchone() == (599,)


def test_the_crates_parquet_parts_hold_what_the_parser_returns(tmp_path, monkeypatch):
    """The crate writes the parts itself (crates/maillog/src/pq.rs); the same lines through
    the parser's Arrow output and pyarrow's Parquet writer must give the very same rows,
    every column, for every log family, noise, quarantine and bytes that are not UTF-8.
    The crate also reads a plain file itself (Parser.read_block): in reads of 997 bytes,
    lines span reads, and the rows are the same again."""
    import gzip

    from conftest import FIXTURES, SAMPLES

    from ingest import arrow_landing
    from ingest.landing import PROVENANCE
    from ingest.parsers.maillog import COLUMN_NAMES, COLUMNS

    body = b"".join(p.read_bytes() for p in sorted((FIXTURES / "maillogs").iterdir()))
    body += gzip.decompress(sorted(SAMPLES.glob("runs/*/maillog*.gz"))[0].read_bytes())
    body += b"\nNov 21 22:04:35 mx1 -- MARK --\n"
    body += b"Nov 21 22:04:34 mx1 postfix/smtpd[1]: x\xff\xfe y\nnot a log line\x00\n"
    log = tmp_path / "maillog"
    log.write_bytes(body)
    lines = body.count(b"\n")
    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        ensure_schema(con)
        con.execute("begin")
        rust = _land(con, log, fid=1)  # the landing's path: Rust blocks
        py = arrow_landing.land(con, 2, "maillog", f"{PROVENANCE}, {COLUMNS}", _blocks_of(log, 4096))
        monkeypatch.setattr("ingest.parsers.maillog.BLOCK", 997)
        small = _land(con, log, fid=3)
        con.execute("commit")
        assert (small.total, small.parsed, small.noise, small.quarantined) == (
            rust.total,
            rust.parsed,
            rust.noise,
            rust.quarantined,
        )
        assert (rust.total, rust.parsed, rust.noise, rust.quarantined) == (
            py.total,
            py.parsed,
            py.noise,
            py.quarantined,
        )
        assert rust.total == lines and rust.noise >= 1 and rust.quarantined >= 2
        cols = ", ".join(["line_no", "item_no", *COLUMN_NAMES])
        one, two, three = (
            con.execute(f"select {cols} from raw.maillog where file_id = {f} order by line_no").fetchall()
            for f in (1, 2, 3)
        )
        assert len(one) == rust.parsed > 1000
        assert one == two == three
        noise = con.execute(
            "select file_id, line_no, kind, text from raw.noise union all "
            "select file_id, line_no, reason, text from raw.quarantine"
        ).fetchall()
        assert sorted(r[1:] for r in noise if r[0] == 1) == sorted(r[1:] for r in noise if r[0] == 2)
        assert sorted(r[1:] for r in noise if r[0] == 1) == sorted(r[1:] for r in noise if r[0] == 3)


def test_the_loader_rebuilds_views_once_and_a_killed_ingest_is_repaired(tmp_path):
    """The loader lands files with view=False and rebuilds the view once (binding it reads
    every part's footer); parts committed by an ingest killed before that rebuild appear at
    the next ensure_schema."""
    from ingest.landing import refresh_views

    db = tmp_path / "l.duckdb"
    con = duckdb.connect(str(db))
    ensure_schema(con)
    paths = []
    for fid in (7, 8):
        p = tmp_path / f"maillog-{fid}"
        p.write_text("\n".join(LINES) + "\n")
        paths.append(p)
        con.execute("begin")
        land_file(con, MaillogParser(), fid, FileSource(p, p.name), ParseContext(year=2026), view=False)
        con.execute("commit")
    postfix_lines = sum(ln.count("postfix/") for p in paths for ln in p.read_text().splitlines())
    assert postfix_lines == 4
    assert con.execute("select count(*) from raw.maillog").fetchone()[0] == 0  # view not rebuilt yet
    assert con.execute("select count(distinct file_id) from raw.parquet_files").fetchone()[0] == 2
    refresh_views(con)
    assert con.execute("select count(*) from raw.maillog").fetchone()[0] == postfix_lines
    # a third file lands and the process dies before the loader's rebuild
    p = tmp_path / "maillog-9"
    p.write_text("\n".join(LINES) + "\n")
    con.execute("begin")
    land_file(con, MaillogParser(), 9, FileSource(p, p.name), ParseContext(year=2026), view=False)
    con.execute("commit")
    con.close()
    con = duckdb.connect(str(db))
    ensure_schema(con)  # what every ingest does first
    rows = con.execute("select file_id, count(*) from raw.maillog group by 1 order by 1").fetchall()
    assert rows == [(7, 2), (8, 2), (9, 2)]
    con.close()


def test_parts_hold_every_column_so_the_view_reads_one_schema(tmp_path):
    """Parts are written with every column of raw.maillog (NULL where no line sets it), so the
    view reads them by name without union_by_name (which reads every part's footer whenever
    the view is bound). A landing from before (parts with their set columns only, no
    all_columns in the ledger) keeps the union and reads the same rows."""
    from ingest.arrow_landing import _columns, rebuild_view
    from ingest.landing import bulk_tables

    ddl = bulk_tables()["maillog"]

    log = tmp_path / "maillog"
    log.write_text("\n".join(LINES) + "\n")
    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        ensure_schema(con)
        _land(con, log)
        (part,) = _parts(tmp_path / "x.duckdb.parquet" / "maillog")
        written = {r[0] for r in con.execute(f"select name from parquet_schema('{part}')").fetchall()}
        assert {n for n, _ in _columns(ddl)} <= written  # client_ip ... though no line sets them
        view = con.execute("select sql from duckdb_views() where view_name = 'maillog'").fetchone()[0]
        assert "union_by_name" not in view
        rows = con.execute("select * from raw.maillog order by line_no").fetchall()
        assert [r[1] for r in rows] == [1, 2]

        con.execute("update raw.parquet_files set all_columns = null")  # as an older landing
        rebuild_view(con, "maillog", ddl)
        view = con.execute("select sql from duckdb_views() where view_name = 'maillog'").fetchone()[0]
        assert "union_by_name" in view
        assert con.execute("select * from raw.maillog order by line_no").fetchall() == rows


def test_a_parser_upgrade_relands_every_maillog_with_one_view_rebuild(tmp_path, monkeypatch):
    """A new parser version re-lands every maillog of the archive: each changed file's parts
    are unlisted and its new ones listed without binding the view per file (which read every
    part's footer each time); the loader rebuilds it once, and it then holds every line once."""
    import shutil

    from conftest import SAMPLES

    from ingest import arrow_landing, folder_state
    from ingest.loader import ingest_archive

    archive = tmp_path / "archive"
    for run in ("a-baseline-t5", "c-throttled-queue-backlog"):
        shutil.copytree(SAMPLES / "runs" / run, archive / run)
    db = tmp_path / "u.duckdb"
    ingest_archive(archive, db, tmp_path / "work")
    with duckdb.connect(str(db), read_only=True) as con:
        before = con.execute("select file_id, count(*) from raw.maillog group by 1 order by 1").fetchall()
    assert len(before) >= 2

    rebuilt: list[str] = []
    real = arrow_landing.rebuild_view

    def counting(con, table, ddl):
        rebuilt.append(table)
        return real(con, table, ddl)

    monkeypatch.setattr(arrow_landing, "rebuild_view", counting)
    monkeypatch.setattr(MaillogParser, "version", MaillogParser.version + "-next")
    monkeypatch.setattr(folder_state, "code_version", lambda: "with the next parser")  # new code
    report = ingest_archive(archive, db, tmp_path / "work")
    relanded = [f for f in report.files if f.format == "maillog" and f.status == "loaded"]
    assert len(relanded) == len(before)
    # ensure_schema's, then the loader's one rebuild (the lines' view and the two from them)
    assert rebuilt == ["maillog", "maillog_messages", "maillog_minutes"] * 2
    with duckdb.connect(str(db)) as con:
        after = con.execute("select file_id, count(*) from raw.maillog group by 1 order by 1").fetchall()
        assert after == before
        # the old parts, unlisted, go at the next ensure_schema (every ingest's first step)
        listed = {r[0] for r in con.execute("select path from raw.parquet_files").fetchall()}
        # at least a part of lines, one of messages and one of minutes per file; the first
        # landing's parts are still on disk beside them
        assert 3 * len(before) <= len(listed) < len(_parts(tmp_path / "u.duckdb.parquet"))
        ensure_schema(con)
    assert {str(p) for p in _parts(tmp_path / "u.duckdb.parquet")} == listed


def test_a_query_on_some_files_opens_only_their_parts(tmp_path):
    """Each file's parts sit in its own partition folder (`maillog/file_id=<id>/`), so a
    filter on file_id picks the parts from their paths and opens no other part."""
    log = tmp_path / "maillog"
    log.write_text("\n".join(LINES) + "\n")
    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        ensure_schema(con)
        for fid in (7, 8, 9):
            _land(con, log, fid)
        for part in _parts(tmp_path / "x.duckdb.parquet"):
            fid = int(part.parent.name.removeprefix("file_id="))
            assert part.parent.parent.name.startswith("maillog") and fid in (7, 8, 9)
        # file 9's part made unreadable (the first part, 7's, gives the view its schema): a
        # query on file 8 never opens it
        for part in _parts(tmp_path / "x.duckdb.parquet"):
            if part.parent.name == "file_id=9":
                part.write_bytes(b"not parquet")
        assert con.execute("select count(*), min(line_no) from raw.maillog where file_id = 8").fetchone() == (
            2,
            1,
        )
        with pytest.raises(duckdb.Error):
            con.execute("select count(*) from raw.maillog").fetchone()


def test_a_landing_from_before_the_partition_folders_is_moved_into_them(tmp_path):
    """Parts of an older landing (flat in the store folder) move into their files' partition
    folders at the next ensure_schema: the same rows, the ledger names the new paths, and
    the old names are gone."""
    import shutil

    log = tmp_path / "maillog"
    log.write_text("\n".join(LINES) + "\n")
    store = tmp_path / "x.duckdb.parquet"
    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        ensure_schema(con)
        for fid in (7, 8):
            _land(con, log, fid)
        rows = con.execute("select * from raw.maillog order by file_id, line_no").fetchall()
        for part in _parts(store):  # as an older landing laid them out
            flat = store / f"maillog-{part.parent.name.removeprefix('file_id=')}-{part.name}"
            shutil.move(part, flat)
            con.execute("update raw.parquet_files set path = ? where path = ?", [str(flat), str(part)])
            part.parent.rmdir()
        from ingest.landing import refresh_views

        refresh_views(con)
        view = con.execute("select sql from duckdb_views() where view_name = 'maillog'").fetchone()[0]
        assert "hive_partitioning" not in view
        assert con.execute("select * from raw.maillog order by file_id, line_no").fetchall() == rows

    with duckdb.connect(str(tmp_path / "x.duckdb")) as con:
        ensure_schema(con)
        listed = {r[0] for r in con.execute("select path from raw.parquet_files").fetchall()}
        assert {str(p) for p in _parts(store)} == listed
        assert all(p.parent.name in ("file_id=7", "file_id=8") for p in _parts(store))
        view = con.execute("select sql from duckdb_views() where view_name = 'maillog'").fetchone()[0]
        assert "hive_partitioning" in view
        assert con.execute("select * from raw.maillog order by file_id, line_no").fetchall() == rows
