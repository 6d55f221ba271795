"""Every format lands the same rows whether its file is UTF-8, UTF-16 (with a BOM) or has
CRLF line ends: detection and parsing read a file the same way (UTF-16 is re-encoded as
UTF-8 before a parser sees it, the compiled maillog parser included)."""

from __future__ import annotations

import gzip
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES, SAMPLES

from ingest.loader import ingest_archive
from ingest.parsers import PARSERS

# one real file per format (the Dovecot log is a maillog the mailbox side writes)
SOURCES = {
    "maillog": SAMPLES / "runs/a-baseline-t5/maillog.gz",
    "dovecot": SAMPLES / "runs/f-mailbox-pop/dovecot.log.gz",
    "postal": SAMPLES / "runs/a-baseline-t5/postal.csv",
    "vmstat": SAMPLES / "runs/a-baseline-t5/vmstat.txt",
    "iostat": SAMPLES / "runs/a-baseline-t5/iostat.txt",
    "queue_sizes": SAMPLES / "runs/a-baseline-t5/queue.txt",
    "postconf": SAMPLES / "runs/a-baseline-t5/postconf-n.txt",
    "smtp_source": SAMPLES / "runs/e-smtp-source-s5/smtp-source.out",
    "dtrace": FIXTURES / "sysstat/bpftrace_maps.txt",
    "sample_series": FIXTURES / "sysstat/queue-read.Priority",
}
FORMAT = {name: ("maillog" if name == "dovecot" else name) for name in SOURCES}
NAMES = {"maillog": "maillog", "dovecot": "dovecot.log", "postal": "postal.csv"}


def _text(path: Path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")


def _variants(text: str) -> dict[str, bytes]:
    return {
        "utf8": text.encode("utf-8"),
        "utf16": text.encode("utf-16"),  # with a BOM (little-endian here)
        "crlf": text.replace("\n", "\r\n").encode("utf-8"),
    }


@pytest.fixture(scope="module")
def landed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("enc")
    archive = tmp / "archive"
    for name, src in SOURCES.items():
        for variant, data in _variants(_text(src)).items():
            run = archive / f"{name}-{variant}"
            run.mkdir(parents=True)
            (run / NAMES.get(name, src.name.removesuffix(".gz"))).write_bytes(data)
            # a fixed date: year-less maillog stamps take it, whatever the file's content
            (run / "run.toml").write_text(f'run_id = "{name}-{variant}"\ndate = 2026-11-21\n')
    db = tmp / "enc.duckdb"
    ingest_archive(archive, db, tmp / "work")
    return db


def _rows(con, name: str, variant: str) -> tuple[tuple, dict[str, list]]:
    fid, fmt, *counts = con.execute(
        "select file_id, format, lines_total, lines_parsed, lines_noise, lines_quarantined, status "
        "from raw.files where run_key = ? and not path like '%run.toml'",
        [f"{name}-{variant}"],
    ).fetchone()
    tables = {}
    for table in [*PARSERS[FORMAT[name]].tables, "noise", "quarantine"]:
        cur = con.execute(
            f"select * exclude (file_id) from raw.{table} where file_id = ? order by all", [fid]
        )
        rows = cur.fetchall()
        if table in ("noise", "quarantine"):  # the line's own text, kept with its CR
            rows = [tuple(v.removesuffix("\r") if isinstance(v, str) else v for v in r) for r in rows]
        tables[table] = rows
    return (fmt, *counts), tables


@pytest.mark.parametrize("variant", ["utf16", "crlf"])
@pytest.mark.parametrize("name", sorted(SOURCES))
def test_format_lands_the_same_rows_in_every_encoding(landed, name, variant):
    with duckdb.connect(str(landed), read_only=True) as con:
        want_meta, want = _rows(con, name, "utf8")
        got_meta, got = _rows(con, name, variant)
    assert want_meta[0] == FORMAT[name] and want_meta[-1] == "loaded", want_meta
    n_lines = _text(SOURCES[name]).count("\n")  # the oracle: newlines of the sample itself
    assert want_meta[1] == n_lines and want_meta[2] > 0, want_meta
    assert got_meta == want_meta
    for table, rows in want.items():
        assert got[table] == rows, (table, len(got[table]), len(rows))
