"""Parsers stream: a file is read and landed in batches of lines, each parser's state carried
across batch boundaries, and the result is the whole-file parse whatever the batch size.

Oracles: the whole-file parse of the same input (one batch), FileSource.data() (the file
decoded at once) for the streamed lines, and counts of the lines these tests write."""

from __future__ import annotations

import gzip
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES, SAMPLES

import ingest.ledger
import ingest.source
from ingest.detect import detect
from ingest.landing import ensure_schema, land_file
from ingest.loader import ingest_archive
from ingest.parsers import PARSERS, ParseContext
from ingest.source import FileSource, split_lines

STREAMED = sorted(f for f, p in PARSERS.items() if not hasattr(p, "record_batches"))


def _sample_files() -> dict[str, list[Path]]:
    """Every sample and fixture file, by the non-maillog format detection gives it."""
    out: dict[str, list[Path]] = {fmt: [] for fmt in STREAMED}
    for root in (SAMPLES, FIXTURES):
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.name != "run.toml":
                try:
                    fmt = detect(FileSource(path, path.name)).format
                except Exception:  # noqa: BLE001 - unreadable files are not samples of a format
                    continue
                if fmt in out:
                    out[fmt].append(path)
    return out


SAMPLE_FILES = _sample_files()


def _view(ledger) -> tuple:
    return (
        {t: rows for t, rows in ledger.rows.items() if rows},
        {t: rows for t, rows in ledger.meta.items() if rows},
        ledger.noise,
        ledger.quarantine,
        ledger.status,
        {n: items for n, items in ledger.items.items() if items},
    )


def test_every_streamed_format_has_samples():
    assert STREAMED and all(SAMPLE_FILES[f] for f in STREAMED if f != "exim_rejectlog"), {
        f: len(v) for f, v in SAMPLE_FILES.items()
    }


@pytest.mark.parametrize("fmt", STREAMED)
@pytest.mark.parametrize("batch_lines", [1, 2, 7])
def test_small_batches_parse_as_the_whole_file(fmt, batch_lines, monkeypatch):
    ctx = ParseContext(commands={"vmstat_command": "vmstat 5", "iostat_command": "iostat -x 5"})
    split = longest = 0  # files that came in more than one batch; the longest file
    for path in SAMPLE_FILES[fmt]:
        lines = list(FileSource(path, path.name).lines())
        whole = PARSERS[fmt].parse(lines, ctx)
        monkeypatch.setattr(ingest.ledger, "BATCH_LINES", batch_lines)
        batches = list(PARSERS[fmt].batches(lines, ctx))
        monkeypatch.undo()
        split += len(batches) > 1
        longest = max(longest, len(lines))
        assert _view(ingest.ledger.Ledger.merged(batches)) == _view(whole), path
    assert split or longest <= 2 * batch_lines


def _land(path: Path, fmt: str) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    ensure_schema(con)
    con.execute("begin")
    land_file(con, PARSERS[fmt], 1, FileSource(path, path.name), ParseContext())
    con.execute("commit")
    return con


def test_postal_events_waiting_for_their_row_across_batches_land_as_in_one(monkeypatch):
    """A postal output of stderr events and no per-minute row (the tool died before its first
    minute): the events wait for a row that never comes, over many batches; landed, they are
    the rows of the whole-file landing, one per `Server error:`/`Can't ...` line."""
    path = SAMPLES / "runs/d0-postal-segfault-connlimit/postal.csv"
    events = sum(1 for ln in path.read_text().splitlines() if ln.startswith(("Server error:", "Can't")))
    query = "select * exclude (file_id) from raw.postal_events order by line_no, item_no"
    whole = _land(path, "postal").execute(query).fetchall()
    monkeypatch.setattr(ingest.ledger, "BATCH_LINES", 2)
    assert len(list(PARSERS["postal"].batches(FileSource(path, path.name).lines(), ParseContext()))) > 10
    con = _land(path, "postal")
    assert con.execute(query).fetchall() == whole
    assert len(whole) == events > 10
    assert con.execute("select count(*) from raw.postal_events where segment is null").fetchone() == (0,)


def test_bad_values_are_quarantined_in_the_batch_they_fall_in(tmp_path, monkeypatch):
    """A value the parser cannot convert (2026-02-30) quarantines its line and only it, in
    whichever batch it falls; the batches before it are landed once."""
    rows = [f"2026-11-21T22:{m:02d}:{s:02d}Z,{m},{s},0,0" for m in range(3) for s in range(0, 60, 5)]
    bad = {2, 9, 10, 23, 37}  # line numbers; 37 is the last line
    lines = ["utc,incoming,active,deferred,maildrop"] + rows
    for n in bad:
        lines[n - 1] = f"2026-02-30T22:00:{n:02d}Z,1,1,1,1"
    path = tmp_path / "queue.txt"
    path.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(ingest.ledger, "BATCH_LINES", 3)
    con = duckdb.connect()
    ensure_schema(con)
    con.execute("begin")
    counts = land_file(con, PARSERS["queue_sizes"], 1, FileSource(path, path.name), ParseContext())
    con.execute("commit")
    total = path.read_bytes().count(b"\n")
    counted = (counts.total, counts.parsed, counts.noise, counts.quarantined)
    assert counted == (total, total - 1 - len(bad), 1, len(bad))
    q = con.execute("select line_no, reason, text from raw.quarantine order by line_no").fetchall()
    assert [n for n, _, _ in q] == sorted(bad)
    assert all(r.startswith("bad value:") and t == lines[n - 1] for n, r, t in q)
    landed = con.execute("select line_no from raw.queue_samples order by line_no").fetchall()
    assert [n for (n,) in landed] == [n for n in range(2, total + 1) if n not in bad]


def test_a_file_cut_short_lands_nothing(tmp_path, monkeypatch):
    """A gzip cut short is found after batches were written: the file's one transaction
    leaves none of its rows, and the file is recorded as an error."""
    text = "".join(f"2026-11-21T22:00:{s % 60:02d}Z,{s},0,0,0\n" for s in range(20000))
    data = gzip.compress(("utc,incoming,active,deferred,maildrop\n" + text).encode())
    run = tmp_path / "archive" / "cut"
    run.mkdir(parents=True)
    (run / "queue.txt.gz").write_bytes(data[: len(data) * 3 // 4])
    monkeypatch.setattr(ingest.ledger, "BATCH_LINES", 1000)
    db = tmp_path / "t.duckdb"
    ingest_archive(tmp_path / "archive", db, tmp_path / "work")
    with duckdb.connect(str(db), read_only=True) as con:
        status, message = con.execute(
            "select status, message from raw.files where path like '%queue%'"
        ).fetchone()
        assert status == "error" and "truncated gzip" in message
        assert con.execute("select count(*) from raw.queue_samples").fetchone() == (0,)
        assert con.execute("select count(*) from raw.noise").fetchone() == (0,)


TEXT = "vmstat 1\n r  b\n١٢٣ é \x01 ok\r\n\n" + "".join(f"line {i} ünï\r\n" for i in range(300))


@pytest.mark.parametrize(
    "variant",
    ["utf8", "utf8-no-final-newline", "utf16-bom", "utf16-le", "utf16-be", "crlf", "latin1", "empty", "gzip"],
)
@pytest.mark.parametrize("block", [1, 3, 64, 1 << 20])
def test_streamed_lines_are_the_lines_of_the_whole_file(variant, block, tmp_path, monkeypatch):
    data = {
        "utf8": TEXT.encode(),
        "utf8-no-final-newline": TEXT.rstrip("\n").encode(),
        "utf16-bom": TEXT.encode("utf-16"),
        "utf16-le": TEXT.encode("utf-16-le"),
        "utf16-be": TEXT.encode("utf-16-be"),
        "crlf": TEXT.replace("\n", "\r\n").encode(),
        "latin1": TEXT.encode("latin-1", "replace"),
        "empty": b"",
        "gzip": gzip.compress(TEXT.encode("utf-16")),
    }[variant]
    path = tmp_path / ("f.gz" if variant == "gzip" else "f.txt")
    path.write_bytes(data)
    whole = FileSource(path, path.name)
    expected = [whole.decode(raw) for raw in split_lines(whole.data())]
    monkeypatch.setattr(ingest.source, "BLOCK", block)
    streamed = FileSource(path, path.name)
    assert [t for _, t in streamed.lines()] == expected
    assert [n for n, _ in streamed.lines()] == list(range(1, len(expected) + 1))
    assert streamed.encoding == whole.encoding
