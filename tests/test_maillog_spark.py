"""The Spark SQL maillog parse against the DuckDB one: the same rows, every column, every file.

Each case lands a file with MaillogParser.land (DuckDB), writes its lines to Parquet with
write_lines_parquet, parses that with parse_lines_spark + split_parsed (what
parse_file_spark composes; one test calls it as is) and compares raw.maillog, raw.noise and
raw.quarantine with Spark's three DataFrames row for row. Timestamps are compared as
epoch microseconds (Spark hands out session-zone instants, DuckDB naive UTC), doubles and
all other columns exactly.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import FIXTURES, SAMPLES, land_file

from ingest.manifest import parse_manifest, utc_offset_minutes
from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import COLUMN_NAMES, COLUMNS, MaillogParser, write_lines_parquet
from ingest.parsers.maillog_spark import (
    YEAR_BLOCK_LINES,
    SparkDialect,
    java_regex,
    parse_file_spark,
    parse_lines_spark,
    read_lines,
    split_parsed,
)

FILE_ID = 7
SAMPLE_LOGS = sorted(p for p in SAMPLES.rglob("maillog*") if p.is_file()) + [
    FIXTURES / "misc" / "postfix37_maillog_file.log.gz"
]
FIXTURE_LOGS = sorted((FIXTURES / "maillogs").iterdir())
# contexts as tests/test_maillog_parser.py uses them; every other fixture: year 2026, UTC
FIXTURE_CTX: dict[str, list[dict]] = {
    "newyear.log": [
        {"year": 2025, "utc_offset_minutes": 60},
        {"year": 2026, "start_utc": datetime(2026, 1, 1, 0, 0)},
    ],
    "exim_main.log": [{"year": 2026, "utc_offset_minutes": 60}],
    "rsyslog_rfc3339.log": [{"year": 2026, "utc_offset_minutes": 600}],
}
TABLES = {
    "maillog": ["file_id", "line_no", "item_no", *COLUMN_NAMES],
    "noise": ["file_id", "line_no", "item_no", "kind", "text"],
    "quarantine": ["file_id", "line_no", "item_no", "reason", "text"],
}
_SPARK_TYPE = {"VARCHAR": "string", "INTEGER": "int", "BIGINT": "bigint", "DOUBLE": "double"}
SPARK_TYPES = {
    "maillog": [("file_id", "bigint"), ("line_no", "int"), ("item_no", "int")]
    + [(c.split()[0], _SPARK_TYPE.get(c.split()[1], c.split()[1].lower())) for c in COLUMNS.split(", ")],
    "noise": [
        ("file_id", "bigint"),
        ("line_no", "int"),
        ("item_no", "int"),
        ("kind", "string"),
        ("text", "string"),
    ],
    "quarantine": [
        ("file_id", "bigint"),
        ("line_no", "int"),
        ("item_no", "int"),
        ("reason", "string"),
        ("text", "string"),
    ],
}

# Lines where DuckDB and Spark differ unless the dialect bridges them (see maillog_spark):
# Unicode spaces around MARK and blank lines (trim), VT inside a token (\S), a Unicode letter
# after `Sent` (\b), U+2028/U+0085 at a line's end (`$` and `.`), NUL/CR/invalid UTF-8 (the
# Python line split), pids with tabs, signs, overflow, 24:00:00 stamps, `+0100` zones, a
# sender holding `, nrcpt=` (negative substr length), non-BMP characters (positions).
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
def spark():
    """One session for the module; not stopped (other modules may share the process-wide one).

    Whole-stage codegen is off here: the parse's projection is too big for it (the JVM's
    64 KB method limit), so Spark falls back to per-expression codegen anyway, after a doomed
    compile of some seconds per query. test_parse_file_spark_in_one_call runs with it on."""
    from mtabench.spark import local_session

    session = local_session()
    key = "spark.sql.codegen.wholeStage"
    old = session.conf.get(key)
    session.conf.set(key, "false")
    yield session
    session.conf.set(key, old)


def run_context(folder: Path) -> dict:
    """ParseContext fields as ingest.loader derives them from the run's run.toml."""
    toml = folder / "run.toml"
    if not toml.exists():
        return {"year": 2026}
    m = parse_manifest(toml.read_text())
    day = m.start_utc or m.date
    at = m.start_utc.replace(tzinfo=UTC) if m.start_utc else None
    if at is None and m.date:
        at = datetime(m.date.year, m.date.month, m.date.day, tzinfo=UTC)
    return {
        "run_key": folder.name,
        "year": day.year if day else 2026,
        "run_date": m.date,
        "start_utc": m.start_utc,
        "end_utc": m.end_utc,
        "monitor_start_utc": m.monitor_start_utc,
        "timezone": m.timezone,
        "utc_offset_minutes": utc_offset_minutes(m.timezone, at),
    }


def _differences(con, duck_sql: str, cols: list[str]) -> str:
    """'' if the DuckDB rows and the registered `spark_rows` are the same multiset, else the
    first few differing lines with the columns that differ."""
    a, b = f"select {', '.join(cols)} from ({duck_sql})", f"select {', '.join(cols)} from spark_rows"
    bad = con.execute(
        f"select line_no from (({a}) except all ({b})) union select line_no from (({b}) except all ({a})) "
        "order by 1 limit 5"
    ).fetchall()
    out = []
    for (line_no,) in bad:
        rows = []
        for sql in (a, b):
            r = con.execute(f"select * from ({sql}) where line_no = ?", [line_no]).fetchall()
            rows.append(dict(zip(cols, r[0], strict=True)) if len(r) == 1 else {"rows": r})
        diff = {c: (rows[0].get(c), rows[1].get(c)) for c in cols if rows[0].get(c) != rows[1].get(c)}
        out.append(f"line {line_no}: (duckdb, spark) {diff}")
    return "\n".join(out)


def compare(
    spark,
    con,
    path: Path,
    tmp_path: Path,
    ctx: dict,
    blocks: tuple[int, ...] = (YEAR_BLOCK_LINES,),
    one_call=False,
) -> dict[str, int]:
    """Land with DuckDB, parse with Spark, assert the three tables equal; rows per table.

    The parse runs once (a local checkpoint) and is split once per rollover block size in
    `blocks`; `one_call` goes through parse_file_spark instead, which runs it per output."""
    counts = land_file(con, MaillogParser(), path, file_id=FILE_ID, **ctx)
    parquet = tmp_path / f"{path.name}.lines.parquet"
    assert write_lines_parquet(path, parquet) == counts.total
    lines = spark.read.parquet(str(parquet))
    pctx = ParseContext(**ctx)
    parsed = (
        None if one_call else parse_lines_spark(spark, lines, year=ctx["year"], ctx=pctx).localCheckpoint()
    )
    for block in blocks:
        if parsed is None:
            out = parse_file_spark(
                spark, lines, file_id=FILE_ID, year=ctx["year"], ctx=pctx, block_lines=block
            )
        else:
            out = split_parsed(parsed, file_id=FILE_ID, ctx=pctx, block_lines=block)
        rows = {table: _compare_table(con, table, df) for table, df in zip(TABLES, out, strict=True)}
    assert (rows["maillog"], rows["noise"], rows["quarantine"]) == (
        counts.parsed,
        counts.noise,
        counts.quarantined,
    )
    print(f"{path.name} {ctx}: {rows}")
    return rows


def _compare_table(con, table: str, df) -> int:
    cols = TABLES[table]
    assert df.dtypes == SPARK_TYPES[table], table
    con.register(
        "spark_rows", df.selectExpr(*[f"unix_micros({c}) as {c}" if c == "ts" else c for c in cols]).toArrow()
    )
    try:
        duck = f"select {', '.join('epoch_us(ts) as ts' if c == 'ts' else c for c in cols)} from raw.{table}"
        n_duck = con.execute(f"select count(*) from ({duck})").fetchone()[0]
        n_spark = con.execute("select count(*) from spark_rows").fetchone()[0]
        diff = _differences(con, duck, cols)
    finally:
        con.unregister("spark_rows")
    assert (n_spark, diff) == (n_duck, ""), f"{table}: {n_duck} DuckDB rows, {n_spark} Spark rows\n{diff}"
    return n_duck


@pytest.mark.parametrize("path", SAMPLE_LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_samples_parse_the_same_in_spark(spark, landing_con, tmp_path, path):
    rows = compare(spark, landing_con, path, tmp_path, run_context(path.parent))
    assert rows["maillog"] > 0


@pytest.mark.parametrize(
    ("path", "ctx"),
    [(p, c) for p in FIXTURE_LOGS for c in FIXTURE_CTX.get(p.name, [{"year": 2026}])],
    ids=lambda v: v.name if isinstance(v, Path) else ",".join(f"{k}={x}" for k, x in v.items()),
)
def test_fixtures_parse_the_same_in_spark(spark, landing_con, tmp_path, path, ctx):
    rows = compare(spark, landing_con, path, tmp_path, ctx)
    assert rows["maillog"] > 0


@pytest.mark.parametrize(
    ("name", "data", "ctx"),
    [
        ("edge.log", EDGE_UTF8.encode(), {"year": 2026, "utc_offset_minutes": -90}),
        ("odd.log", EDGE_ODD, {"year": 2026}),
        (
            "latin1.log",
            EDGE_UTF8.encode() + b"\nNov 21 22:04:44 mx1 postfix/smtpd[1]: caf\xe9\n",
            {"year": 2026},
        ),
        ("edge.log.gz", None, {"year": 2026}),
        ("empty.log", b"", {"year": 2026}),
    ],
    ids=["utf8-edges", "cr-nul-invalid-utf8", "invalid-utf8-rejected-by-csv", "gzip-edges", "empty"],
)
def test_edge_lines_parse_the_same_in_spark(spark, landing_con, tmp_path, name, data, ctx):
    import gzip

    path = tmp_path / name
    path.write_bytes(gzip.compress(EDGE_UTF8.encode() + b"\n" + EDGE_ODD) if data is None else data)
    rows = compare(spark, landing_con, path, tmp_path, ctx)
    assert (sum(rows.values()) == 0) == (name == "empty.log")


@pytest.mark.parametrize(
    "ctx",
    [{"year": 2025, "utc_offset_minutes": 60}, {"year": 2026, "start_utc": datetime(2026, 1, 1, 0, 0)}],
    ids=["dec-run", "january-run"],
)
def test_new_year_rollover_across_window_blocks(spark, landing_con, tmp_path, ctx):
    path = tmp_path / "rollover.log"
    path.write_text(ROLLOVER + "\n")
    rows = compare(spark, landing_con, path, tmp_path, ctx, blocks=(1, 2, 3, YEAR_BLOCK_LINES))
    assert (rows["maillog"], rows["noise"]) == (7, 2)
    years = landing_con.execute("select year(ts) from raw.maillog order by line_no").fetchall()
    assert len({y for (y,) in years}) == 2  # the rollover did shift some lines


def test_parse_file_spark_in_one_call(spark, landing_con, tmp_path):
    spark.conf.set("spark.sql.codegen.wholeStage", "true")  # as sessions run it by default
    try:
        path, ctx = FIXTURES / "maillogs" / "newyear.log", FIXTURE_CTX["newyear.log"][0]
        rows = compare(spark, landing_con, path, tmp_path, ctx, one_call=True)
    finally:
        spark.conf.set("spark.sql.codegen.wholeStage", "false")
    assert rows["maillog"] == 5


def test_split_reads_a_persisted_parse_once(spark, tmp_path):
    """split_parsed works on DataFrames, not SQL over views or WITH: Spark then finds the
    persisted parse instead of parsing again for each output."""
    ctx = ParseContext(year=2026)
    lines = read_lines(spark, FIXTURES / "maillogs" / "sendmail.log", tmp_path / "lines.parquet")
    parsed = parse_lines_spark(spark, lines, year=2026, ctx=ctx).persist()
    try:
        for df in split_parsed(parsed, file_id=FILE_ID, ctx=ctx):
            plan = df._jdf.queryExecution().executedPlan().toString()
            # the parquet scan shows only inside the cached relation's own plan
            assert "InMemoryTableScan" in plan and "FileScan parquet" not in plan.split("InMemoryRelation")[0]
    finally:
        parsed.unpersist()


def test_raw_literals_without_escaped_string_literals(spark, landing_con, tmp_path):
    """With spark.sql.parser.escapedStringLiterals off, regexes go in as r'...' literals."""
    key = "spark.sql.parser.escapedStringLiterals"
    old = spark.conf.get(key)
    spark.conf.set(key, "false")
    try:
        path = tmp_path / "edge.log"
        path.write_bytes(EDGE_UTF8.encode())
        rows = compare(spark, landing_con, path, tmp_path, {"year": 2026})
    finally:
        spark.conf.set(key, old)
    assert rows["maillog"] > 0


def test_java_regex_keeps_re2_meaning():
    assert java_regex(r"^a\S+ [^\s\]]$") == r"(?d)^a[^\t\n\f\r ]+ [^\t\n\f\r \]]$"
    assert java_regex(r"x\b").endswith("(?=[0-9A-Za-z_]))")
    for bad in (r"[a[b]]", r"[a&&b]", r"[]a]", "a\\", r"\B"):
        with pytest.raises(ValueError):
            java_regex(bad)
    with pytest.raises(ValueError):
        SparkDialect().lit("it's")
    assert SparkDialect(escaped=False).regex(r"\d") == r"r'(?d)\d'"
    assert SparkDialect(escaped=True).regex(r"\d") == r"'(?d)\d'"
