"""The maillog parse as Spark SQL, for archives too big for one machine.

The SQL is the one maillog.py builds for DuckDB, generated from the same patterns and field
definitions through SparkDialect, which spells what differs: function names (instr,
startswith, rlike, timestamp_micros, div, conv), casts, and where the engines evaluate alike
spelled differently, an emulation of DuckDB's result:

- Regexes: DuckDB runs RE2, Spark java.util.regex. Each pattern is rewritten (java_regex)
  so that both match the same text: UNIX_LINES, so that only LF ends a line for `.` and `$`
  (Java also counts CR, U+0085, U+2028/9); RE2's `\\s` without VT; an ASCII `\\b`.
- trim(): DuckDB strips Unicode space separators (Zs), Spark only ' '.
- Integer casts of free text (pid, commands=, qmgr size/nrcpt): DuckDB also trims only ASCII
  whitespace, Spark any control character: Spark only casts what matches DuckDB's plain
  integer grammar. (DuckDB also reads `1.5`, `1e3`, `0x1f`, `1_000` as integers; Spark
  gives NULL for those.)
- A timestamp at 24:00:00 is the next midnight in DuckDB, NULL in Spark.

parse_file_spark() returns the rows land() writes to raw.maillog, raw.noise and
raw.quarantine. The New-Year rollover (maillog._fix_years) shuffles only (line_no, month)
pairs, windowed per block of lines, and joins the few changed line ranges back by broadcast,
so no window puts a whole file in one partition and the parsed rows never move. The session
must use UTC as its time zone (mtabench.spark.local_session does): timestamps are then UTC
wall-clock values as in DuckDB.

Whole-stage codegen gives up on the parse (its projection exceeds the JVM's 64 KB method
limit; Spark logs the failed compile and runs it with per-expression codegen), so the cost
is mostly regexes: about 19 s for 1.1 M Postfix lines on two local cores.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import _TYPES, COLUMN_NAMES, Dialect, _sql_for, write_lines_parquet

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_WS = r"\t\n\f\r "  # RE2's \s; Java's also holds \x0B
_WORD = "0-9A-Za-z_"  # RE2's \w (Java 17's \b looks at Unicode letters)
_BOUNDARY = f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))"
_SPARK_TYPES = {"varchar": "string", "integer": "int"}
# DuckDB's integer grammar without its decimal, exponent, hex, binary and `_` forms; the
# whitespace is C's isspace, which DuckDB trims and Spark (which trims more) accepts.
_PLAIN_INT = r"^([\t\n\x0B\f\r ]*[+-]?[0-9]+[\t\n\x0B\f\r ]*)$"
_ZS_ENDS = r"^\p{Zs}+|\p{Zs}+$"  # what DuckDB's trim() strips: Unicode space separators
_DUCK_MIDNIGHT = r"^\d{4}-\d\d-\d\d[T ]24:00:00(?:\.0+)?$"
YEAR_BLOCK_LINES = 1 << 20  # lines per block of the New-Year rollover windows


def java_regex(pattern: str) -> str:
    """The RE2 `pattern` as a Java regex matching the same text in one line (no LF).

    Nested classes (`[` inside `[...]`) and class intersections (`&&`) are literal in RE2
    but not in Java; no pattern uses them, so they are refused rather than translated.
    """
    out = ["(?d)"]  # UNIX_LINES: `.`, `^`, `$` only know LF, as in RE2
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise ValueError(f"trailing backslash in {pattern!r}")
            e = pattern[i + 1]
            i += 2
            if e == "s":
                out.append(_WS if in_class else f"[{_WS}]")
            elif e in "SbB" and in_class:
                raise ValueError(f"\\{e} inside a class in {pattern!r}")
            elif e == "S":
                out.append(f"[^{_WS}]")
            elif e == "b":
                out.append(_BOUNDARY)
            elif e == "B":
                raise ValueError(f"\\B is not translated ({pattern!r})")
            else:
                out.append(c + e)
            continue
        if in_class:
            if c == "[" or pattern.startswith("&&", i):
                raise ValueError(f"Java reads [ or && inside a class differently: {pattern!r}")
            in_class = c != "]"
        elif c == "[":
            in_class = True
            out.append(c)
            i += 1
            if pattern.startswith("^", i):
                out.append("^")
                i += 1
            if pattern.startswith("]", i):
                raise ValueError(f"leading ] in a class: {pattern!r}")
            continue
        out.append(c)
        i += 1
    return "".join(out)


class SparkDialect(Dialect):
    """Spark SQL spellings of the constructs maillog.Dialect lists (see the module doc).

    `escaped` is spark.sql.parser.escapedStringLiterals: when true (as mtabench.spark sets
    it) a '...' literal is read raw like DuckDB's; otherwise raw literals are written r'...'.
    """

    name = "spark"

    def __init__(self, escaped: bool = True) -> None:
        self.escaped = escaped

    def lit(self, s: str) -> str:
        # neither literal form has one quoting rule for ' under both settings; a literal
        # ending in a backslash would escape its closing quote
        if "'" in s or (len(s) - len(s.rstrip("\\"))) % 2:
            raise ValueError(f"literal not portable to Spark: {s!r}")
        return f"'{s}'" if self.escaped or "\\" not in s else f"r'{s}'"

    def regex(self, pattern: str) -> str:
        return self.lit(java_regex(pattern))

    def rxs(self, expr: str, pattern: str, names: list[str]) -> str:
        # Spark has no multi-group extract; named_struct keeps the `x.field` references
        fields = ", ".join(f"{self.lit(n)}, {self.extract(expr, pattern, g)}" for g, n in enumerate(names, 1))
        return f"named_struct({fields})"

    def match(self, expr: str, pattern: str) -> str:
        return f"({expr} rlike {self.regex(pattern)})"

    def full_match(self, expr: str, pattern: str) -> str:
        return self.match(expr, f"^(?:{pattern})$")

    def strpos(self, expr: str, sub: str) -> str:
        return f"instr({expr}, {sub})"

    def starts_with(self, expr: str, prefix: str) -> str:
        return f"startswith({expr}, {self.lit(prefix)})"

    def ends_with(self, expr: str, suffix: str) -> str:
        return f"endswith({expr}, {self.lit(suffix)})"

    @staticmethod
    def type_name(typ: str) -> str:
        """Spark's name of a DuckDB type from COLUMNS."""
        return _SPARK_TYPES.get(typ.lower(), typ.lower())

    def cast(self, expr: str, typ: str) -> str:
        return f"cast(({expr}) as {self.type_name(typ)})"

    def null(self, typ: str) -> str:
        return f"cast(NULL as {self.type_name(typ)})"

    def try_num(self, expr: str, typ: str) -> str:
        # digits (dots, a sign) a regex group took: Spark's try_cast reads them as DuckDB does
        return f"try_cast({expr} as {self.type_name(typ)})"

    def try_int(self, expr: str, typ: str) -> str:
        # one mention of expr: '' (no match) casts to NULL
        return f"try_cast({self.extract(expr, _PLAIN_INT, 1)} as {self.type_name(typ)})"

    def try_ts(self, expr: str) -> str:
        day = f"try_cast(substr({expr}, 1, 10) as timestamp)"
        next_day = f"timestamp_micros(unix_micros({day}) + 86400000000)"
        midnight = f"case when {self.match(expr, _DUCK_MIDNIGHT)} then {next_day} end"
        return f"coalesce(try_cast({expr} as timestamp), {midnight})"

    def trim(self, expr: str) -> str:
        return f"regexp_replace({expr}, {self.regex(_ZS_ENDS)}, '')"

    def trim_chars(self, expr: str, chars: str) -> str:
        return f"trim(BOTH {self.lit(chars)} FROM {expr})"

    def idiv(self, a: str, b: str) -> str:
        return f"{a} div {b}"

    def ts_from_us(self, us: str) -> str:
        return f"timestamp_micros({us})"

    def minus_minutes(self, ts: str, minutes: str) -> str:
        return f"timestamp_micros(unix_micros({ts}) - ({minutes}) * 60000000)"

    def hex_bigint(self, expr: str) -> str:
        return f"cast(conv({expr}, 16, 10) as bigint)"

    def clock_secs(self, hms: str, hh: str, mm: str, ss: str) -> str:
        return f"({self._hms_sum(hh, mm, ss)})"

    def element(self, array: str, index: str) -> str:
        return f"element_at({array}, cast({index} as int))"  # div gives a bigint

    def bigint_array(self, values: list[int]) -> str:
        return "array(" + ", ".join(f"{v}L" for v in values) + ")"

    def bigint(self, n: int) -> str:
        return f"cast({int(n)} as bigint)"


def _shift_years(kept: DataFrame, ctx: ParseContext, block: int) -> DataFrame:
    """maillog._fix_years: the rows of `kept` with `shift`, the years to add to ts.

    A step is a jump of six or more months between consecutive syslog lines (+1 back, -1
    forward); a line's shift is the sum of the steps up to it, -1 more for a January run
    whose log opens in December. Only (line_no, month) pairs are shuffled: windows over
    blocks of `block` lines find the steps, a window over the blocks' first and last months
    the steps at block borders. The few lines where the shift changes give line ranges that
    are broadcast and joined to the rows by range, so the wide rows never move.
    """
    from pyspark.sql import functions as F  # noqa: N812 (the usual name)

    off_us = int(ctx.utc_offset_minutes) * 60_000_000
    ref = ctx.start_utc or ctx.run_date
    january = "true" if ref is not None and ref.month == 1 else "false"
    step = "case when {p} - {m} >= 6 then 1 when {m} - {p} >= 6 then -1 else 0 end".format
    syslog = "ts_format = 'syslog' and ts is not null"
    months = kept.where(syslog).selectExpr(
        "line_no",
        f"line_no div {int(block)} as blk",
        f"month(timestamp_micros(unix_micros(ts) + {off_us})) as mon",
    )
    steps = months.selectExpr(
        "line_no", f"{step(p='lag(mon) over (partition by blk order by line_no)', m='mon')} as delta"
    ).where("delta <> 0")
    blocks = months.groupBy("blk").agg(
        F.expr("min(line_no)").alias("first_line"),
        F.expr("min_by(mon, line_no)").alias("first_mon"),
        F.expr("max_by(mon, line_no)").alias("last_mon"),
    )
    borders = blocks.selectExpr(
        "first_line as line_no", f"{step(p='lag(last_mon) over (order by blk)', m='first_mon')} as delta"
    )
    start = blocks.selectExpr(
        "0L as line_no", f"case when {january} and min_by(first_mon, blk) = 12 then -1 else 0 end as delta"
    )
    ranges = (
        steps.unionByName(borders)
        .unionByName(start)
        .selectExpr(
            "line_no as lo",
            "lead(line_no) over (order by line_no) as hi",
            "sum(delta) over (order by line_no rows between unbounded preceding and current row) as shift",
        )
        .where("shift <> 0")
    )
    cond = F.expr(
        "r.ts_format = 'syslog' and r.ts is not null "
        "and r.line_no >= iv.lo and (iv.hi is null or r.line_no < iv.hi)"
    )
    return (
        kept.alias("r")
        .join(F.broadcast(ranges).alias("iv"), cond, "left")
        .selectExpr("r.*", "coalesce(iv.shift, 0) as shift")
    )


def _check_session(spark: SparkSession) -> bool:
    """True if string literals are read raw; raises unless the session time zone is UTC."""
    tz = spark.conf.get("spark.sql.session.timeZone")
    if tz not in ("UTC", "Etc/UTC", "Z", "+00:00"):
        raise ValueError(f"spark.sql.session.timeZone must be UTC (is {tz!r}): stamps are UTC wall clock")
    return spark.conf.get("spark.sql.parser.escapedStringLiterals", "false").lower() == "true"


def _sql(spark: SparkSession, query: str, **frames: DataFrame) -> DataFrame:
    """spark.sql(query), each `{name}` in it naming frames[name] through a uniquely named
    temp view, dropped right away: a DataFrame keeps its analysed plan, not the name.
    (Replaced, not str.format: the parse SQL holds regex braces.)"""
    tag = uuid.uuid4().hex
    names = {k: f"_maillog_{k}_{tag}" for k in frames}
    for k, df in frames.items():
        df.createOrReplaceTempView(names[k])
        query = query.replace("{" + k + "}", names[k])
    try:
        return spark.sql(query)
    finally:
        for name in names.values():
            spark.catalog.dropTempView(name)


def parse_lines_spark(spark: SparkSession, lines_df: DataFrame, *, year: int, ctx: ParseContext) -> DataFrame:
    """Every line parsed (line_no and the raw.maillog columns; noise and quarantine lines
    with kind __noise/__quarantine, detail = noise kind or reason), before the split and the
    New-Year rollover: the rows of maillog._PARSE_SQL. `lines_df`: `line_no BIGINT, line
    STRING, bad BOOLEAN`; `year`: base year of year-less stamps (land() takes ctx.year, else
    the file's mtime year). The parse is a WITH query, inside which Spark does not use a
    cached `lines_df`: persist this result instead."""
    dialect = SparkDialect(_check_session(spark))
    src = "select cast(line_no as bigint) as line_no, line, bad from {lines}"
    return _sql(spark, _sql_for(src, year, ctx, dialect), lines=lines_df)


def split_parsed(
    parsed: DataFrame,
    *,
    file_id: int,
    ctx: ParseContext,
    block_lines: int = YEAR_BLOCK_LINES,
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """(maillog, noise, quarantine) rows of one file from parse_lines_spark's rows, as
    land() moves them to raw.maillog, raw.noise and raw.quarantine, the year rollover done.
    The maillog rows read `parsed` twice (months, rows): persist it. (DataFrame calls, not
    SQL over temp views: Spark then finds a persisted `parsed` by its plan.)"""
    prov = [f"cast({int(file_id)} as bigint) as file_id", "cast(line_no as int) as line_no", "0 as item_no"]
    noise = parsed.where("kind = '__noise'").selectExpr(*prov, "detail as kind", "message as text")
    quarantine = parsed.where("kind = '__quarantine'").selectExpr(
        *prov, "detail as reason", "message as text"
    )
    kept = parsed.where("kind not in ('__noise', '__quarantine')")
    cols = [
        "case when shift <> 0 then ts + make_ym_interval(cast(shift as int), 0) else ts end as ts"
        if c == "ts"
        else f"cast({c} as {SparkDialect.type_name(_TYPES[c])}) as {c}"
        for c in COLUMN_NAMES
    ]
    maillog = _shift_years(kept, ctx, block_lines).selectExpr(*prov, *cols)
    return maillog, noise, quarantine


def parse_file_spark(
    spark: SparkSession,
    lines_df: DataFrame,
    *,
    file_id: int,
    year: int,
    ctx: ParseContext,
    block_lines: int = YEAR_BLOCK_LINES,
) -> tuple[DataFrame, DataFrame, DataFrame]:
    """Parse one file's lines (`line_no BIGINT, line STRING, bad BOOLEAN`) as land() does.

    Returns (maillog, noise, quarantine) with the columns of raw.maillog (file_id, line_no,
    item_no, *COLUMN_NAMES), raw.noise (file_id, line_no, item_no, kind, text) and
    raw.quarantine (file_id, line_no, item_no, reason, text). All three are lazy and run
    the parse (the maillog rows twice: months, rows); to run it once, persist the middle step:

        parsed = parse_lines_spark(spark, lines_df, year=year, ctx=ctx).persist()
        maillog, noise, quarantine = split_parsed(parsed, file_id=file_id, ctx=ctx)
        ...write them...; parsed.unpersist()
    """
    parsed = parse_lines_spark(spark, lines_df, year=year, ctx=ctx)
    return split_parsed(parsed, file_id=file_id, ctx=ctx, block_lines=block_lines)


def read_lines(spark: SparkSession, path_in: Path, parquet_out: Path) -> DataFrame:
    """A plain or gzip maillog as the `lines_df` of parse_file_spark, through the Parquet
    file write_lines_parquet makes (the form big inputs arrive in)."""
    write_lines_parquet(Path(path_in), Path(parquet_out))
    return spark.read.parquet(str(parquet_out))
