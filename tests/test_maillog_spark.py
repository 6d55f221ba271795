"""Spark's maillog parse (the compiled parser in mapInArrow tasks) against the DuckDB landing:
the same rows, every column, every file; noise and quarantine counts too.

Both engines run the same parser, so this checks the plumbing around it: the staging of
files, the task context (year, offset, run start), the Arrow -> Spark -> Parquet types.
Timestamps are compared as read back by DuckDB from Spark's Parquet.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from conftest import FIXTURES, SAMPLES, found, land_file

from ingest.maillog_lines import StagedLines
from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import COLUMN_NAMES, MaillogParser

# Edge lines kept from the SQL-parser era (where the two engines once differed): Unicode
# spaces around MARK and blank lines, VT inside a token, a Unicode letter after `Sent`,
# U+2028/U+0085 at a line's end, NUL/CR/invalid UTF-8, pids with tabs, signs, overflow,
# 24:00:00 stamps, `+0100` zones, a sender holding `, nrcpt=`, non-BMP characters.
EDGE_UTF8 = "\n".join(
    [
        "Nov 21 22:04:34 mx1 postfix/smtpd[101]: connect from localhost[127.0.0.1]",
        "\u3000\u00a0 ",
        "Nov 21 22:04:35 mx1 \u2002-- MARK --\u00a0",
        "Nov 21 22:04:35 mx1 last message repeated 3 times",
        "Nov 21 22:04:36 mx1 postfix/smtpd[\t102]: NOQUEUE: reject: RCPT\x0bx from a[1.2.3.4]: 550 5.1.1 "
        "<u@x>: Recipient address rejected; from=<s@x> to=<u@x> proto=ESMTP helo=<h\x0bx>",
        "Nov 21 22:04:37 mx1 postfix/smtp[+103]: 5E12A9C6789: to=<a@b>, relay=r[1.2.3.4]:25, delay=0.05, "
        "delays=0.02/0.03/0/0, dsn=2.0.0, status=sent (250 ok\u0085)",
        "Nov 21 22:04:38 mx1 postfix/smtpd[99999999999]: lost connection after DATA from x[1.2.3.4]\u2028",
        "Nov 21 22:04:39 mx1 postfix/qmgr[-0]: 5E12A9C6789: from=<a, nrcpt=12@b>, size=1234, nrcpt=1 (queue "
        "active)",
        "Nov 21 22:04:39 mx1 postfix/qmgr[12\x0c]: 5E12A9C6790: from=<\U0001f986@b>, size=99, nrcpt=2 (queue "
        "active)",
        "Nov 21 22:04:39 mx1 postfix/qmgr[12\x1c]: 5E12A9C6791: removed",
        "Nov 21 22:04:40 mx1 postfix/smtpd[7]: disconnect from a[1.2.3.4] ehlo=1 commands=\t3/5",
        "Nov 21 22:04:41 mx1 sendmail[5]: rA37ZTSC026254: to=<b@c>, delay=00:00:01, mailer=esmtp, "
        "stat=Sent\u00e9x",
        "Nov 21 22:04:42 mx1 sendmail[5]: rA37ZTSC026255: to=<b@c>, delay=1+02:03:04, stat=Deferred: x",
        "Nov  1 24:00:00 mx1 postfix/qmgr[1]: 6E4579C6791: removed",
        "Nov 01 12:60:00 mx1 postfix/qmgr[1]: 6E4579C6791: removed",
        "2026-11-21T24:00:00.000+01:00 mx1 postfix/qmgr[1]: 6E4579C6791: removed",
        "2026-11-21T22:04:09.7553619+0130 mx1 postfix/qmgr[1]: 6E4579C6791: removed",
        "2026-11-21T22:04:09-01:30 mx1 postfix/qmgr[1]: 6E4579C6791: removed",
        "2026-11-21 24:00:00 -0130 [1201] 1rA2bC-000abc-12 <= a@b H=x [1.2.3.4]:25 P=esmtp S=10 id=m@x",
        "2026-11-21 22:04:34.123 1rA2bC-000abc-13 == c@d R=r T=t defer (-44): SMTP error from remote mail "
        "server after RCPT TO:<c@d>: 451 4.3.0 busy QT=1h2m3.5s DT=4s",
        "@4000000068f1a2b31c9c3b24 delivery 17: success: did_0+0+1/",
        "@4000000068f1a2b31c9c3b24 starting delivery 17: msg 4711 to remote bob@example.com",
        "\U0001f986 not a log line at all",
        "",
        "Nov 21 22:04:43 mx1 kernel: [ 12.345] eth0: link up",
    ]
)
EDGE_ODD = (
    b"Nov 21 22:04:34 mx1 postfix/smtpd[1]: connect from a[1.2.3.4]\r\n"
    b"Nov 21 22:04:34 mx1 postfix/smtpd[1]: odd\rline with \x00 nul\n"
    b"Nov 21 22:04:34 mx1 postfix/smtpd[1]: warning: bad \xff\xfe bytes\n"
    b"Nov 21 22:04:35 mx1 postfix/smtp[2]: ABCDEF123: to=<a@b>, relay=none, delay=1, status=deferred (x\r)\n"
    b"\r\n"
    b"Nov 21 22:04:35 mx1 postfix/qmgr[2]: ABCDEF123: removed"
)
# Dec -> Jan -> a late Dec line -> Jan, and noise lines whose months must not count
ROLLOVER = "\n".join(
    [
        "Dec 31 23:59:58 mx1 postfix/qmgr[1]: A1B2C3D4E5: removed",
        "Jun 15 12:00:00 mx1 -- MARK --",
        "Jan  1 00:00:01 mx1 postfix/qmgr[1]: A1B2C3D4E6: removed",
        "Dec 31 23:59:59 mx1 postfix/qmgr[1]: A1B2C3D4E7: removed",
        "Jun 15 12:00:00 mx1 last message repeated 2 times",
        "Jan  1 00:00:02 mx1 postfix/qmgr[1]: A1B2C3D4E8: removed",
        "2026-01-01T00:00:03Z mx1 postfix/qmgr[1]: A1B2C3D4E9: removed",
        "Jul  1 00:00:00 mx1 postfix/qmgr[1]: A1B2C3D4EA: removed",
        "Jan  2 00:00:00 mx1 postfix/qmgr[1]: A1B2C3D4EB: removed",
    ]
)


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from mtabench.engines.spark.session import local_session

    return local_session(warehouse=tmp_path_factory.mktemp("wh"), master="local[2]")


def _cases(tmp: Path) -> list[tuple[Path, ParseContext]]:
    edge = tmp / "edge"
    edge.mkdir()
    (edge / "utf8.log").write_text(EDGE_UTF8)
    (edge / "odd.log").write_bytes(EDGE_ODD)
    (edge / "rollover.log").write_text(ROLLOVER)
    cases = [(p, ParseContext(year=2026)) for p in found(SAMPLES.glob("runs/*/maillog*.gz"), "maillogs")]
    cases += [
        (p, ParseContext(year=2025, utc_offset_minutes=60)) for p in sorted((FIXTURES / "maillogs").iterdir())
    ]
    cases += [
        (edge / "utf8.log", ParseContext(year=2026, utc_offset_minutes=-90)),
        (edge / "odd.log", ParseContext(year=2026)),
        (edge / "rollover.log", ParseContext(year=2026, start_utc=datetime(2026, 1, 1))),
    ]
    return cases


def test_spark_parses_every_file_as_the_duckdb_landing(spark, landing_con, tmp_path):
    from mtabench.engines.spark.engine import parse_staged

    cases = _cases(tmp_path)
    staged, want_counts = [], {}
    for fid, (path, ctx) in enumerate(cases, start=1):
        c = land_file(landing_con, MaillogParser(), path, file_id=fid, **ctx.__dict__)
        want_counts[fid] = (c.noise, c.quarantined)
        staged.append(StagedLines(fid, f"run{fid % 3}", "sha", c.total, ctx.year, path, path.name, ctx))
    out, counts = tmp_path / "maillog", tmp_path / "counts"
    parse_staged(spark, staged, out, counts)
    cols = ", ".join(["file_id", "line_no", "item_no", *COLUMN_NAMES])
    want = landing_con.execute(f"select {cols} from raw.maillog order by file_id, line_no").fetchall()
    got = landing_con.execute(
        f"select {cols} from read_parquet('{out}/*/*.parquet', hive_partitioning = false) "
        "order by file_id, line_no"
    ).fetchall()
    assert len(got) == len(want) > 290_000
    assert got == want
    got_counts = dict(
        (r[0], (r[1], r[2]))
        for r in landing_con.execute(f"select * from read_parquet('{counts}/*.parquet')").fetchall()
    )
    assert {f: c for f, c in want_counts.items() if c != (0, 0)} == got_counts
    assert sum(n + q for n, q in got_counts.values()) > 5
