"""Detection reads a file as its parser does: a line the parser calls noise does not keep
the file from being recognised."""

from __future__ import annotations

import duckdb
from conftest import SAMPLES

from ingest.loader import ingest_archive


def test_postconf_dump_with_a_comment_line_lands(tmp_path):
    src = (SAMPLES / "runs/a-baseline-t5/postconf-n.txt").read_text()
    settings = [ln for ln in src.splitlines() if ln.strip()]
    run = tmp_path / "archive/r"
    run.mkdir(parents=True)
    text = "# postconf -n on the benchmark host\n" + src
    (run / "postconf-n.txt").write_text(text)
    ingest_archive(tmp_path / "archive", tmp_path / "db.duckdb", tmp_path / "work")
    with duckdb.connect(str(tmp_path / "db.duckdb"), read_only=True) as con:
        fid, fmt, status, total, parsed, noise, quarantined = con.execute(
            "select file_id, format, status, lines_total, lines_parsed, lines_noise, lines_quarantined "
            "from raw.files where path like '%postconf-n.txt'"
        ).fetchone()
        comment = con.execute("select line_no, kind from raw.noise where file_id = ?", [fid]).fetchall()
    assert (fmt, status) == ("postconf", "loaded")
    # the oracle: the lines written above, counted here
    assert total == text.count("\n") and parsed == len(settings)
    assert (noise, quarantined) == (total - len(settings), 0)
    assert (1, "comment") in comment
