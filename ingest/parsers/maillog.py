"""Mail logs (Postfix, Sendmail, Exim, qmail/multilog) landed in bulk with DuckDB SQL.

Every line of the file becomes exactly one row: a `raw.maillog` row (kind says what it
was; `other` keeps program and text of shapes we do not know), a `raw.noise` row (blank
lines, syslog `-- MARK --` and `message repeated` lines) or a `raw.quarantine` row (not a
log line at all, or bytes that are not UTF-8).

The file is read by DuckDB's CSV reader with no delimiter, no quotes and no escapes,
`WITH ORDINALITY` giving the line number. That reader also breaks lines at a lone CR and
stops a line at the delimiter (NUL), so files holding CR or NUL bytes, and files the
reader rejects (invalid UTF-8, over-long lines), are split on LF in Python with numpy and
handed to the same SQL as an Arrow table instead. All field extraction is the SQL in
`_PARSE_SQL`: `parse()` (per-line JSON for `mtabench parse`) runs it too, on an
in-memory DuckDB. The same SQL is generated for Spark (`_build_sql("spark")`, run by
maillog_spark.py): what the two engines spell differently goes through `Dialect` methods,
so the patterns and field definitions below stay the only ones. `write_lines_parquet`
writes the lines as this reader splits them, the input of the Spark parse.

Speed (bench/maillog_bench.py): the header is cut with strpos/substr (no capture regexes,
no split_part); the kind is decided by prefix tests and turned into an integer code `kc`
once, and every output column is one CASE over `kc` whose THEN runs only on that kind's
rows; the hottest Postfix kinds use string functions (on `aux`, the text after their fixed
prefix) instead of regexes; year and offset are inlined as literals (a parameter inside a
per-row expression is slow); the year-rollover UPDATE only runs when the file holds
months six or more apart.

Timestamps: classic syslog (`Nov  1 22:04:34`, day space-padded), postlogd (`Nov 01`),
RFC 3339 (own offset), Exim (`YYYY-MM-DD HH:MM:SS [+zzzz]`) and TAI64N (`@4000...`).
Year-less stamps take ctx.year (else the file's mtime year) and roll over at New Year;
local stamps become UTC with ctx.utc_offset_minutes (local = UTC + offset).
"""

from __future__ import annotations

import gzip
import mmap
import re
import shutil
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.ledger import Ledger, LineCounts
from ingest.parsers.base import ParseContext, Parser

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

    from ingest.source import FileSource

COLUMNS = (
    "ts TIMESTAMP, ts_format VARCHAR, host VARCHAR, program VARCHAR, pid INTEGER, queue_id VARCHAR, "
    "kind VARCHAR, "
    "client VARCHAR, message_id VARCHAR, sender VARCHAR, size BIGINT, nrcpt INTEGER, "
    "recipient VARCHAR, orig_to VARCHAR, relay VARCHAR, mailer VARCHAR, conn_use INTEGER, "
    "delay DOUBLE, delay_before_qmgr DOUBLE, delay_in_qmgr DOUBLE, delay_conn_setup DOUBLE, "
    "delay_transmission DOUBLE, dsn VARCHAR, status VARCHAR, status_text VARCHAR, "
    "reject_action VARCHAR, reject_stage VARCHAR, smtp_code INTEGER, enhanced_code VARCHAR, "
    "reason VARCHAR, proto VARCHAR, helo VARCHAR, severity VARCHAR, detail VARCHAR, "
    "commands VARCHAR, commands_ok INTEGER, commands_total INTEGER, related_queue_id VARCHAR, "
    "message VARCHAR"
)
COLUMN_NAMES = [c.strip().split(" ")[0] for c in COLUMNS.split(",")]

_SNIFF_SYSLOG = re.compile(
    r"^(?:[A-Z][a-z]{2} [ 0-9]?\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) \S+ "
    r"(?P<prog>postfix[^\[:\s]*|sendmail|sm-mta|sm-msp-queue|exim4?)(?:\[\d+\])?: ",
    re.M,
)
_SNIFF_EXIM = re.compile(
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [+-]\d{4})?(?: \[\d+\])? "
    r"(?:[0-9A-Za-z]{6}-[0-9A-Za-z]{6,11}-[0-9A-Za-z]{2,4} (?:<=|=>|->|\*\*|==|Completed)"
    r"|Start queue run|End queue run|exim \S+ daemon started)",
    re.M,
)
_SNIFF_QMAIL = re.compile(
    r"^@4000[0-9a-f]{20} (?:new msg|info msg|starting delivery|delivery \d+|end msg|status:)", re.M
)

# Reader options shared by land() and the benchmark's bare count: one VARCHAR column,
# no delimiter (NUL), no quoting; the ordinality is the line number.
READ_OPTS = (
    "columns={'line': 'VARCHAR'}, header=false, quote='', escape='', delim=chr(0), "
    "auto_detect=false, strict_mode=false, compression='none'"
)
MONTHS = "JanFebMarAprMayJunJulAugSepOctNovDec"
TAI64_UNIX = 4611686018427387914  # 2^62 + 10 s (TAI - UTC when multilog labels were defined)


def _q(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


class Dialect:
    """The SQL constructs DuckDB and Spark SQL spell or evaluate differently, DuckDB's way.

    The parse is written once (GROUPS, _kind_sql, _build_sql) against these methods, and
    maillog_spark.SparkDialect overrides them, so both engines run the same definitions.
    Text both engines read alike stays plain SQL: CASE, coalesce, nullif, contains,
    split_part, length, struct.field / struct['field'], and substr/left with start >= 1 and
    length >= 0 (code points on both). The DuckDB text is byte for byte what the parser ran
    before the Spark port existed.
    """

    name = "duckdb"

    def lit(self, s: str) -> str:
        return _q(s)

    def regex(self, pattern: str) -> str:
        """A regex literal; every pattern here is written for RE2, DuckDB's engine."""
        return _q(pattern)

    def extract(self, expr: str, pattern: str, group: int) -> str:
        """Group `group` of the first match, '' when there is none."""
        return f"regexp_extract({expr}, {self.regex(pattern)}, {group})"

    def rx(self, expr: str, pattern: str, group: int = 1) -> str:
        """Group `group` of `pattern` in `expr`, NULL when it does not match or is empty."""
        return f"nullif({self.extract(expr, pattern, group)}, '')"

    def rxs(self, expr: str, pattern: str, names: list[str]) -> str:
        """Groups 1..n as a struct with fields `names` ('' where no match): one regex run."""
        return f"regexp_extract({expr}, {self.regex(pattern)}, {names!r})"

    def match(self, expr: str, pattern: str) -> str:
        """`pattern` matches somewhere in `expr`."""
        return f"regexp_matches({expr}, {self.regex(pattern)})"

    def full_match(self, expr: str, pattern: str) -> str:
        return f"regexp_full_match({expr}, {self.regex(pattern)})"

    def strpos(self, expr: str, sub: str) -> str:
        """1-based position of SQL string `sub` in `expr`, 0 when absent."""
        return f"strpos({expr}, {sub})"

    def starts_with(self, expr: str, prefix: str) -> str:
        return f"starts_with({expr}, {self.lit(prefix)})"

    def ends_with(self, expr: str, suffix: str) -> str:
        return f"ends_with({expr}, {self.lit(suffix)})"

    def cast(self, expr: str, typ: str) -> str:
        """`expr` as column type `typ` (DuckDB's type names, as in COLUMNS)."""
        return f"({expr})::{typ}"

    def null(self, typ: str) -> str:
        return f"NULL::{typ}"

    def try_num(self, expr: str, typ: str) -> str:
        """Digits (and dots) a regex group captured, as a number; NULL if it does not fit."""
        return f"try_cast({expr} as {typ})"

    def try_int(self, expr: str, typ: str) -> str:
        """Free text as an integer type, NULL when it is not one."""
        return f"try_cast({expr} as {typ})"

    def try_ts(self, expr: str) -> str:
        """An ISO date-time text as a timestamp, NULL when it is not a valid one."""
        return f"try_cast({expr} as timestamp)"

    def trim(self, expr: str) -> str:
        """Strip Unicode space separators (category Zs) at both ends: DuckDB's trim()."""
        return f"trim({expr})"

    def trim_chars(self, expr: str, chars: str) -> str:
        return f"trim({expr}, {self.lit(chars)})"

    def idiv(self, a: str, b: str) -> str:
        return f"{a} // {b}"

    def ts_from_us(self, us: str) -> str:
        """Timestamp from microseconds since the epoch."""
        return f"make_timestamp({us})"

    def minus_minutes(self, ts: str, minutes: str) -> str:
        return f"{ts} - to_minutes({minutes})"

    def hex_bigint(self, expr: str) -> str:
        return f"('0x' || {expr})::bigint"

    def clock_secs(self, hms: str, hh: str, mm: str, ss: str) -> str:
        """Seconds since midnight of `hms` (`HH:MM:SS`, fields `hh`, `mm`, `ss`): the TIME cast
        is faster, the sum covers what it rejects (12:60:00) and agrees on all it accepts."""
        return f"coalesce(epoch(try_cast({hms} as time))::bigint, {self._hms_sum(hh, mm, ss)})"

    @staticmethod
    def _hms_sum(hh: str, mm: str, ss: str) -> str:
        return f"cast({hh} as bigint) * 3600 + cast({mm} as bigint) * 60 + cast({ss} as bigint)"

    def element(self, array: str, index: str) -> str:
        """1-based element of an array."""
        return f"{array}[{index}]"

    def bigint_array(self, values: list[int]) -> str:
        return "([" + ", ".join(map(str, values)) + "]::bigint[])"

    def bigint(self, n: int) -> str:
        return f"{int(n)}::bigint"


DUCKDB = Dialect()


def dialect_for(dialect: str | Dialect) -> Dialect:
    """The Dialect named "duckdb" or "spark" (raw '...' literals, as mtabench.spark sets)."""
    if isinstance(dialect, Dialect):
        return dialect
    if dialect == "duckdb":
        return DUCKDB
    if dialect == "spark":
        from ingest.parsers.maillog_spark import SparkDialect  # pure Python; no pyspark import

        return SparkDialect()
    raise ValueError(f"unknown SQL dialect {dialect!r} (duckdb or spark)")


# ---------------------------------------------------------------------------------------
# Patterns: the single source of truth for what the fields are
# ---------------------------------------------------------------------------------------
RX_SYSLOG = r"^(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ 0-9]?\d \d\d:\d\d:\d\d \S"
RX_RFC3339 = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) \S"
RX_EXIM_STAMP = r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
RX_EXIM_HEAD = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)(?: ([+-])(\d\d)(\d\d))?(?: \[(\d+)\])? ?(.*)$"
RX_TAI64 = r"^@4000[0-9a-f]{20}(?: |$)"
RX_RFC3339_ZONE = r"(?:Z|[+-]\d\d:?\d\d)$"
# Postfix queue ids: short (upper-case hex) or long (enable_long_queue_ids: no vowels)
RX_POSTFIX_QID = r"[0-9A-F]{6,}|[0-9B-DF-HJ-NP-TV-Zb-df-hj-np-tv-z]{8,}"
RX_SENDMAIL_QID = r"[0-9A-Za-z]{8,20}"
RX_DELIVERY = (
    r"^to=<([^>]*)>, (?:orig_to=<([^>]*)>, )?relay=([^,]*), (?:conn_use=(\d+), )?delay=([\d.]+), "
    r"(?:delays=([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+), )?(?:dsn=([\d.]+), )?status=([A-Za-z]+)(?: \((.*)\))?"
)
DELIVERY_FIELDS = [
    "to",
    "orig_to",
    "relay",
    "conn_use",
    "delay",
    "d1",
    "d2",
    "d3",
    "d4",
    "dsn",
    "status",
    "text",
]
RX_QMGR_FROM = r"^from=<([^>]*)>, size=(\d+), nrcpt=(\d+)"
RX_REJECT_ACTION = (
    r"^(?:reject|reject_warning|milter-reject|warning|hold|discard|milter-hold|milter-discard): "
)
RX_CLEANUP_CHECK = r"^[a-z_-]+: (?:header|body|END-OF-MESSAGE) "
RX_REPLY = r": (\d{3})(?: (\d\.\d{1,3}\.\d{1,3}))? ([^;]*)"
RX_CLIENT_IN_TEXT = r" from ([^\s\[\];]*\[[^\]]*\](?::\d+)?)"
RX_EXIM_ID = (
    r"^([0-9A-Za-z]{6}-[0-9A-Za-z]{6,11}-[0-9A-Za-z]{2,4}) (<=|=>|->|\*>|\*\*|==|Completed|\S+)(?: (.*))?$"
)
RX_EXIM_HOST = r" H=(\S+(?: \([^)]*\))?(?: \[[^\]]*\](?::\d+)?)?)"
RX_EXIM_DUR = r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:([\d.]+)s)?$"
RX_SM_DELAY = r"^(?:(\d+)\+)?(\d+):(\d\d):(\d\d)$"
RX_SM_REJECT = r", reject=(\d{3})(?: (\d\.\d{1,3}\.\d{1,3}))? ?(.*)$"
REJECT_KIND_LIST = ["reject", "reject_warning", "hold", "discard"]
REJECT_KINDS = "('reject', 'reject_warning', 'hold', 'discard')"


def _secs(d: Dialect, expr: str, pattern: str, weights: tuple[int, ...] = (86400, 3600, 60, 1)) -> str:
    """Durations (Exim 1h2m3s, Sendmail [d+]hh:mm:ss) in seconds; NULL if no match."""
    terms = " + ".join(
        f"coalesce({d.try_num(d.rx(expr, pattern, g), 'double')}, 0) * {w}"
        for g, w in enumerate(weights, start=1)
    )
    return f"(case when {d.match(expr, pattern)} then {terms} end)"


_TYPES = {c.strip().split(" ")[0]: c.strip().split(" ")[1] for c in COLUMNS.split(",")}


# Fast string-function forms of the hottest Postfix extractions (same values as the regexes
# they replace on Postfix's own line shapes)
def upto(d: Dialect, expr: str, ch: str) -> str:
    """`expr` up to (without) the first `ch`: split_part(expr, ch, 1), but cheaper."""
    pos = d.strpos(expr, _q(ch))
    return f"(case when {pos} > 0 then left({expr}, {pos} - 1) else {expr} end)"


def _aux(d: Dialect) -> dict[str, str]:
    """`aux` (p layer): the text after the fixed prefix of the hot Postfix kinds."""
    mid = d.strpos("b", "'message-id='")
    angle = d.cast(f"substr(b, {mid} + 11, 1) = '<'", "integer")
    return {
        "disconnect": "substr(b, 17)",
        "client": "substr(b, 8)",
        "message_id": f"substr(b, {mid} + 11 + {angle})",
        "qmgr_from": "substr(b, 7)",
    }


def _qf_ok(d: Dialect) -> str:
    """qmgr `from=<..>, size=N, nrcpt=N` has the plain shape string functions can cut.
    (strpos is never 0 here, b starting `from=<`; were it, neither engine's substr could
    return '>, size=' though they cut position 0 differently.)"""
    return f"substr(b, {d.strpos('b', _q('>'))}, 8) = '>, size=' and contains(b, ', nrcpt=')"


Group = tuple[str, tuple[str | None, list[str] | None], dict[str, dict[str, str]]]


def _groups(d: Dialect) -> list[Group]:
    """Per-kind field expressions: (group name, guard, {kind or '*': {field: expr}}); each
    output column is one CASE over them (_column_sql). `b` = message after the queue id."""
    qf_ok = _qf_ok(d)
    gt = d.strpos("b", "'>'")
    nrcpt_at = d.strpos("b", "', nrcpt='")
    dc_ok = d.try_int(upto(d, "cs", "/"), "integer")
    dc_total = d.try_int("nullif(split_part(cs, '/', 2), '')", "integer")
    stat = {word: d.match("b", rf", stat={word}\b") for word in ("Sent", "Deferred", "queued")}
    dc_cmds = (
        f"case when {d.strpos('aux', _q(' '))} > 1 "
        f"then nullif(substr(aux, {d.strpos('aux', _q(' '))} + 1), '') end"
    )
    rx = d.rx
    ruleset = rx("b", r"ruleset=([^,]+)")
    arg1 = rx("b", r", arg1=<?([^>,]*)>?")
    return [
        (
            "pdv",  # Postfix delivery lines
            ("postfix", ["delivery"]),
            {
                "*": {
                    "recipient": "nullif(dvr.to, '')",
                    "orig_to": "nullif(dvr.orig_to, '')",
                    "relay": "nullif(dvr.relay, '')",
                    "conn_use": d.try_num("nullif(dvr.conn_use, '')", "integer"),
                    "delay": d.try_num("nullif(dvr.delay, '')", "double"),
                    "delay_before_qmgr": d.try_num("nullif(dvr.d1, '')", "double"),
                    "delay_in_qmgr": d.try_num("nullif(dvr.d2, '')", "double"),
                    "delay_conn_setup": d.try_num("nullif(dvr.d3, '')", "double"),
                    "delay_transmission": d.try_num("nullif(dvr.d4, '')", "double"),
                    "dsn": "nullif(dvr.dsn, '')",
                    "status": "nullif(dvr.status, '')",
                    "status_text": "nullif(dvr.text, '')",
                }
            },
        ),
        (
            "pqf",  # qmgr: from=<..>, size=N, nrcpt=N (queue active)
            ("postfix", ["qmgr_from"]),
            {
                "*": {
                    "sender": f"case when {qf_ok} then left(aux, {d.strpos('aux', _q('>'))} - 1) "
                    "else qfr['from'] end",
                    # a sender holding `, nrcpt=` makes the length negative: DuckDB then cuts
                    # back from `, nrcpt=`, Spark gives ''; neither is an integer (NULL)
                    "size": d.try_int(
                        f"case when {qf_ok} then substr(b, {gt} + 8, {nrcpt_at} - {gt} - 8) "
                        "else qfr['size'] end",
                        "bigint",
                    ),
                    "nrcpt": d.try_int(
                        f"case when {qf_ok} "
                        f"then split_part(substr(b, {nrcpt_at} + 8), ' ', 1) "
                        "else qfr['nrcpt'] end",
                        "integer",
                    ),
                }
            },
        ),
        (
            "prj",  # smtpd/postscreen/cleanup reject, reject_warning, hold, discard
            ("postfix", REJECT_KIND_LIST),
            {
                "*": {
                    "reject_action": "split_part(b, ':', 1)",
                    "reject_stage": rx("b", r"^[a-z_-]+: (\S+)"),
                    "client": rx("b", RX_CLIENT_IN_TEXT),
                    "smtp_code": d.try_num("nullif(rpr.code, '')", "integer"),
                    "enhanced_code": "nullif(rpr.enh, '')",
                    "reason": "nullif(rpr.text, '')",
                    "sender": f"coalesce({rx('b', r'; from=<([^>]*)>')}, {rx('b', r' from=<([^>]*)>')})",
                    "recipient": rx("b", r" to=<([^>]*)>"),
                    "proto": rx("b", r" proto=(\S+)"),
                    "helo": rx("b", r" helo=<([^>]*)>"),
                }
            },
        ),
        (
            "pms",  # the other Postfix kinds
            ("postfix", None),
            {
                "client": {"client": f"nullif({upto(d, 'aux', ',')}, '')"},
                "message_id": {"message_id": f"nullif({upto(d, 'aux', '>')}, '')"},
                "removed": {},
                "connect": {"client": "substr(b, 14)"},
                "disconnect": {
                    "client": upto(d, "aux", " "),
                    "commands": dc_cmds,
                    "commands_ok": dc_ok,
                    "commands_total": f"coalesce(case when {d.strpos('cs', _q('/'))} > 0 "
                    f"then {dc_total} end, {dc_ok})",
                },
                "expired": {
                    "sender": rx("b", r"^from=<([^>]*)>"),
                    "status": "'expired'",
                    "status_text": rx("b", r"status=expired, (.*)$"),
                },
                "pickup": {"sender": rx("b", r"(?:from|sender)=<([^>]*)>")},
                "bounce_notice": {"related_queue_id": rx("b", r"notification: (\S+)$")},
                "defer_notice": {"related_queue_id": rx("b", r"notification: (\S+)$")},
                "dsn_notice": {"related_queue_id": rx("b", r"notification: (\S+)$")},
                "warning": {"severity": "'warning'", "detail": "substr(b, 10)"},
                "error": {"severity": "'error'", "detail": "substr(b, 8)"},
                "fatal": {"severity": "'fatal'", "detail": "substr(b, 8)"},
                "panic": {"severity": "'panic'", "detail": "substr(b, 8)"},
                "lost_connection": {
                    "client": rx("b", r" from (\S+)$"),
                    "detail": rx("b", r"^lost connection after (.*?) from \S+$"),
                },
                "timeout": {
                    "client": rx("b", r" from (\S+)$"),
                    "detail": rx("b", r"^timeout after (.*?) from \S+$"),
                },
                "connect_error": {
                    "relay": rx("b", r"^connect to ([^:]*(?::\d+)?): "),
                    "detail": rx("b", r": ([^:]*)$"),
                },
            },
        ),
        (
            "sml",  # Sendmail
            ("sendmail", None),
            {
                "from": {
                    "sender": f"coalesce({rx('b', r'^from=<?([^>,]*)>?')}, '')",
                    "size": d.try_num(rx("b", r", size=(\d+)"), "bigint"),
                    "nrcpt": d.try_num(rx("b", r", nrcpts=(\d+)"), "integer"),
                    "message_id": rx("b", r", msgid=<?([^>,]*)>?"),
                    "proto": rx("b", r", proto=([^,]+)"),
                    "client": rx("b", r", relay=(.*?)(?:, [a-z]+=|$)"),
                },
                "delivery": {
                    "recipient": d.trim_chars(rx("b", r"^to=(.*?), [a-z_]+="), "<>"),
                    "relay": rx("b", r", relay=([^,]*)"),
                    "mailer": rx("b", r", mailer=([^,]*)"),
                    "delay": _secs(d, rx("b", r", delay=([\d:+]+)"), RX_SM_DELAY),
                    "delay_transmission": _secs(d, rx("b", r", xdelay=([\d:+]+)"), RX_SM_DELAY),
                    "dsn": rx("b", r", dsn=([\d.]+)"),
                    "status": (
                        f"case when {stat['Sent']} then 'sent' when {stat['Deferred']} then 'deferred' "
                        f"when {stat['queued']} then 'queued' else 'bounced' end"
                    ),
                    "status_text": rx("b", r", stat=(.*)$"),
                },
                "reject": {
                    "reject_action": "'reject'",
                    "reject_stage": (
                        f"case {ruleset} when 'check_rcpt' then 'RCPT' when 'check_mail' "
                        f"then 'MAIL' when 'check_relay' then 'CONNECT' else {ruleset} end"
                    ),
                    "client": rx("b", r", relay=(.*?)(?:, [a-z]+=|$)"),
                    "sender": (f"case when contains(b, 'ruleset=check_mail') then {arg1} end"),
                    "recipient": (f"case when contains(b, 'ruleset=check_rcpt') then {arg1} end"),
                    "smtp_code": d.try_num(rx("b", RX_SM_REJECT, 1), "integer"),
                    "enhanced_code": rx("b", RX_SM_REJECT, 2),
                    "reason": rx("b", RX_SM_REJECT, 3),
                },
                "error": {"severity": "'error'", "detail": "b"},
            },
        ),
        (
            "exm",  # Exim main.log
            ("exim", None),
            {
                "arrival": {
                    "sender": d.trim_chars("split_part(ex.rest, ' ', 1)", "<>"),
                    "client": rx("ex.rest", RX_EXIM_HOST),
                    "size": d.try_num(rx("ex.rest", r" S=(\d+)"), "bigint"),
                    "message_id": rx("ex.rest", r" id=(\S+)"),
                    "proto": rx("ex.rest", r" P=(\S+)"),
                    "related_queue_id": rx("ex.rest", r" R=(\S+)"),
                },
                "delivery": {
                    "recipient": "split_part(ex.rest, ' ', 1)",
                    "orig_to": rx("ex.rest", r"^\S+ (?:\([^)]*\) )?<([^>]+)>"),
                    "relay": rx("ex.rest", r" H=(\S+(?: \[[^\]]*\](?::\d+)?)?)"),
                    "mailer": rx("ex.rest", r" T=(\S+)"),
                    "delay": _secs(d, rx("ex.rest", r" QT=(\S+)"), RX_EXIM_DUR),
                    "delay_transmission": _secs(d, rx("ex.rest", r" DT=(\S+)"), RX_EXIM_DUR),
                    "status": (
                        "case ex.flag when '**' then 'bounced' when '==' then 'deferred' else 'sent' end"
                    ),
                    "status_text": (
                        "case when ex.flag in ('**', '==') then "
                        + rx("ex.rest", r": (.*)$")
                        + " else "
                        + rx("ex.rest", r' C="(.*)"')
                        + " end"
                    ),
                    "smtp_code": (
                        "case when ex.flag in ('**', '==') then "
                        + d.try_num(
                            rx(
                                "ex.rest",
                                r": (?:SMTP error from remote mail server after [^:]*: )?(\d{3})[ -]",
                            ),
                            "integer",
                        )
                        + " end"
                    ),
                },
                "reject": {
                    "reject_action": "'reject'",
                    "reject_stage": rx("message", r" rejected (after DATA|\S+)"),
                    "client": rx("message", RX_EXIM_HOST),
                    "sender": rx("message", r" F=<([^>]*)>"),
                    "recipient": rx("message", r" rejected RCPT <?([^>:\s]*)>?"),
                    "reason": rx("message", r" rejected (?:after DATA|\S+)[^:]*: (.*)$"),
                    "smtp_code": d.try_num(rx("message", r": (\d{3}) "), "integer"),
                },
            },
        ),
        (
            "qml",  # qmail-send via multilog
            ("qmail", None),
            {
                "from": {
                    "sender": rx("message", r" from <([^>]*)>"),
                    "size": d.try_num(rx("message", r": bytes (\d+)"), "bigint"),
                },
                "delivery_start": {
                    "recipient": rx("message", r" to (?:local|remote) (\S+)"),
                    "mailer": rx("message", r" to (local|remote) "),
                    "related_queue_id": rx("message", r"delivery (\d+)"),
                },
                "delivery": {
                    "related_queue_id": rx("message", r"delivery (\d+)"),
                    "status": (
                        "case split_part(split_part(message, ': ', 2), ':', 1) when 'success' then 'sent' "
                        "when 'deferral' then 'deferred' when 'failure' then 'bounced' end"
                    ),
                    "status_text": rx("message", r"^delivery \d+: \w+: (.*)$"),
                },
            },
        ),
        (
            "nzq",  # noise kind / quarantine reason
            (None, ["__noise", "__quarantine"]),
            {
                "__noise": {
                    "detail": (
                        f"case when {d.trim('line')} = '' then 'blank' "
                        f"when {d.trim('message')} = '-- MARK --' then 'syslog_mark' else 'syslog_repeat' end"
                    )
                },
                "__quarantine": {
                    "detail": (
                        "case when bad then 'invalid UTF-8 (shown with U+FFFD replacements)' "
                        "else 'not a mail log line (no syslog, Exim or TAI64N stamp)' end"
                    )
                },
            },
        ),
    ]


GROUPS = _groups(DUCKDB)


def _kind_codes() -> dict[tuple[str | None, str], int]:
    """An integer per (family, kind) that some group extracts fields for: the per-column
    CASEs test this code, which is far cheaper than comparing the kind and family strings."""
    codes: dict[tuple[str | None, str], int] = {}
    for _, (fam, kinds), fields in GROUPS:
        for k in kinds if kinds is not None else [k for k, d in fields.items() if d]:
            codes.setdefault((fam, k), len(codes) + 1)
    return codes


KIND_CODES = _kind_codes()


def _kc_test(fam: str | None, kinds: list[str]) -> str:
    return "(" + " or ".join(f"kc = {KIND_CODES[(fam, k)]}" for k in kinds) + ")"


def _kc_sql() -> str:
    by_fam: dict[str | None, list[str]] = {}
    for (fam, k), code in KIND_CODES.items():
        by_fam.setdefault(fam, []).append(f"when {_q(k)} then {code}")
    parts = [f"when kind = {_q(k[1])} then {c}" for k, c in KIND_CODES.items() if k[0] is None]
    parts += [f"when fam = {_q(f)} then (case kind {' '.join(w)} else 0 end)" for f, w in by_fam.items() if f]
    return f"case {' '.join(parts)} else 0 end"


def _column_sql(d: Dialect, groups: list[Group], col: str) -> str:
    """One CASE per output column over the kind codes of the groups that define it."""
    typ = _TYPES[col]
    whens: list[str] = []
    for _, (fam, kinds), fields in groups:
        if "*" in fields:
            if col in fields["*"]:
                whens.append(f"when {_kc_test(fam, kinds)} then {d.cast(fields['*'][col], typ)}")
            continue
        by_expr: dict[str, list[str]] = {}
        for k, f in fields.items():
            if col in f:
                by_expr.setdefault(f[col], []).append(k)
        for expr, ks in by_expr.items():
            whens.append(f"when {_kc_test(fam, ks)} then {d.cast(expr, typ)}")
    if not whens:
        return f"{d.null(typ)} as {col}"
    return f"case {' '.join(whens)} end as {col}"


def _kind_sql(d: Dialect) -> str:
    sw, ew, m = d.starts_with, d.ends_with, d.match
    # (f-string expressions cannot hold backslashes before Python 3.12)
    repeated = m("message", r"^(?:last message repeated \d+ times|message repeated \d+ times)")
    exim_started = m("message", r"^exim \S+ daemon started")
    qmail_delivery = m("message", r"^delivery \d+: ")
    return f"""case
      when bad then '__quarantine'
      when ts_format is null then (case when {d.trim("line")} = '' then '__noise' else '__quarantine' end)
      when fam = 'postfix' then (case
        when {sw("b", "to=<")} and contains(b, ', status=') then 'delivery'
        when {sw("b", "connect from ")} then 'connect'
        when {sw("b", "disconnect from ")} then 'disconnect'
        when {sw("b", "client=")} then 'client'
        when {sw("b", "message-id=")} or {sw("b", "resent-message-id=")} then 'message_id'
        when b = 'removed' then 'removed'
        when {sw("b", "from=<")} and contains(b, ', size=') then 'qmgr_from'
        when {sw("b", "from=<")} and contains(b, ', status=expired') then 'expired'
        when has_q and {m("b", RX_REJECT_ACTION)} then (
          case split_part(b, ':', 1)
            when 'reject' then 'reject' when 'milter-reject' then 'reject'
            when 'reject_warning' then 'reject_warning'
            when 'warning' then (case when {m("b", RX_CLEANUP_CHECK)}
                                      then 'reject_warning' else 'warning' end)
            when 'hold' then 'hold' when 'milter-hold' then 'hold'
            else 'discard' end)
        when qid is not null and ({sw("b", "uid=")} or {sw("b", "sender=")}) then 'pickup'
        when {m("b", "^(?:sender|postmaster) non-delivery notification: ")} then 'bounce_notice'
        when {sw("b", "sender delay notification: ")} then 'defer_notice'
        when {sw("b", "sender delivery status notification: ")} then 'dsn_notice'
        when {m("b", "^(?:warning|error|fatal|panic): ")} then split_part(b, ':', 1)
        when {sw("b", "lost connection after ")} then 'lost_connection'
        when {sw("b", "timeout after ")} then 'timeout'
        when {sw("b", "connect to ")} then 'connect_error'
        when {ew("program", "/master")} then 'master'
        when {ew("program", "/anvil")} then 'anvil'
        when {ew("program", "/postscreen")} then 'postscreen'
        when {ew("program", "/scache")} then 'scache'
        when {ew("program", "/pickup")} then 'pickup'
        when {ew("program", "postfix-script")} or program = 'postfix' then 'script'
        else 'other' end)
      when program is null and ({d.trim("message")} = '-- MARK --'
           or {repeated})
        then '__noise'
      when fam = 'sendmail' then (case
        when {sw("b", "from=")} then 'from'
        when {sw("b", "to=")} and contains(b, ', stat=') then 'delivery'
        when {sw("b", "ruleset=")} and contains(b, ', reject=') then 'reject'
        when {sw("b", "SYSERR")} then 'error'
        else 'other' end)
      when fam = 'exim' then (case
        when ex.flag = '<=' then 'arrival'
        when ex.flag in ('=>', '->', '*>', '**', '==') then 'delivery'
        when ex.flag = 'Completed' then 'removed'
        when {m("message", " rejected (?:RCPT|MAIL|EHLO|HELO|VRFY|after DATA|connection)")}
          then 'reject'
        when {m("message", "^(?:Start|End) queue run")} then 'queue_run'
        when {exim_started} then 'master'
        else 'other' end)
      when fam = 'qmail' then (case
        when {sw("message", "new msg ")} then 'new_msg'
        when {sw("message", "info msg ")} then 'from'
        when {sw("message", "starting delivery ")} then 'delivery_start'
        when {qmail_delivery} then 'delivery'
        when {sw("message", "end msg ")} then 'removed'
        when {sw("message", "bounce msg ")} then 'bounce_notice'
        when {sw("message", "status: ")} then 'status'
        else 'other' end)
      else 'other'
    end"""


def _build_sql(dialect: str | Dialect = "duckdb") -> str:
    """SELECT over `_src(line_no, line, bad)` yielding line_no and the raw.maillog columns.

    Noise and quarantine lines come out with kind '__noise' / '__quarantine' (detail =
    noise kind or reason, message = the whole line); land() moves them to their tables.
    Placeholders (_sql_for fills them in as literals: parameters in per-row expressions are
    slow): $month_us (epoch microseconds of the 1st of each month of the base year of
    year-less stamps), $offset (minutes, local = UTC + offset).
    """
    d = dialect_for(dialect)
    groups = _groups(d)
    head = {"ts", "ts_format", "host", "program", "pid", "queue_id", "kind", "message"}
    out = [c if c in head else _column_sql(d, groups, c) for c in COLUMN_NAMES]
    month = d.idiv(f"({d.strpos(_q(MONTHS), 'substr(line, 1, 3)')} + 2)", "3")
    clock = d.clock_secs(
        "substr(line, slen - 7, 8)",
        "substr(line, slen - 7, 2)",
        "substr(line, slen - 4, 2)",
        "substr(line, slen - 1, 2)",
    )
    # the day is digits and spaces only here, so Spark's trim (spaces only) agrees
    syslog_ts = d.ts_from_us(
        f"{d.element('$month_us', month)}"
        " + ((cast(trim(substr(line, 5, slen - 13)) as bigint) - 1) * 86400"
        f" + {clock}"
        " - $offset * 60) * 1000000"
    )
    rfc_ts = d.minus_minutes(
        d.try_ts(f"regexp_replace(substr(line, 1, slen), {d.regex(RX_RFC3339_ZONE)}, '')"),
        "case when substr(line, slen, 1) = 'Z' then 0 "
        "else (case substr(line, slen - 5, 1) when '-' then -1 else 1 end) * coalesce("
        f"{d.try_num('substr(line, slen - 4, 2)', 'bigint')} * 60"
        f" + {d.try_num('substr(line, slen - 1, 2)', 'bigint')}, 0) end",
    )
    exim_ts = d.minus_minutes(
        d.try_ts("exh.st"),
        "case when exh.sg = '' then $offset "
        f"else (case when exh.sg = '-' then -1 else 1 end) * ({d.try_num('exh.zh', 'bigint')} * 60 "
        f"+ {d.try_num('exh.zm', 'bigint')}) end",
    )
    tai_ts = d.ts_from_us(
        f"({d.hex_bigint('substr(line, 2, 16)')} - {TAI64_UNIX}) * 1000000"
        f" + {d.idiv(d.hex_bigint('substr(line, 18, 8)'), '1000')}"
    )
    qmail_msg = d.rx("message", r"msg (\d+)")
    sm_msp = d.starts_with("program", "sm-msp")
    pid_text = f"substr(tag, {d.strpos('tag', _q('['))} + 1, length(tag) - {d.strpos('tag', _q('['))} - 1)"
    return f"""
with s1 as (
  select line_no, coalesce(line, '') as line, bad,
    case when bad then null
         when {d.match("line", RX_SYSLOG)} then 'syslog'
         when {d.match("line", RX_RFC3339)} then 'rfc3339'
         when {d.match("line", RX_EXIM_STAMP)} then 'exim'
         when {d.match("line", RX_TAI64)} then 'tai64n'
    end as ts_format
  from _src
), s2 as (
  select *,
    case ts_format when 'syslog' then (case when substr(line, 6, 1) = ' ' then 14 else 15 end)
                   when 'rfc3339' then {d.strpos("line", _q(" "))} - 1 end as slen,
    case when ts_format = 'exim'
         then {d.rxs("line", RX_EXIM_HEAD, ["st", "sg", "zh", "zm", "pid", "msg"])} end as exh
  from s1
), s3 as (
  select *, substr(line, slen + 2) as rest from s2
), s4 as (
  select *, {d.strpos("rest", _q(" "))} as sp from s3
), s5 as (
  select *, case when sp > 0 then substr(rest, sp + 1) end as body from s4
), s6 as (
  select *, {d.strpos("body", _q(": "))} as colon from s5
), s7 as (
  select *, case when colon > 1 then substr(body, 1, colon - 1) end as tag0 from s6
), s8 as (
  select line_no, line, bad, ts_format, slen, exh,
    case when sp > 0 then substr(rest, 1, sp - 1) when slen is not null then rest end as host,
    case when tag0 is not null and not contains(tag0, ' ') then tag0 end as tag,
    body, colon
  from s7
), s9 as (
  select line_no, line, bad, ts_format, slen, exh, host,
    case when tag is not null then {upto(d, "tag", "[")}
         when ts_format = 'exim' then 'exim'
         when ts_format = 'tai64n' then 'qmail' end as program,
    case when {d.ends_with("tag", "]")} and {d.strpos("tag", _q("["))} > 0
         then {d.try_int(pid_text, "integer")}
         when ts_format = 'exim' then {d.try_num("exh.pid", "integer")} end as pid,
    case when tag is not null then substr(body, colon + 2)
         when ts_format = 'exim' then exh.msg
         when ts_format = 'tai64n' then substr(line, 27)
         else body end as message
  from s8
), s10 as (
  select *,
    case when {d.starts_with("program", "postfix")} then 'postfix'
         when program = 'sendmail' or program = 'sm-mta' or {sm_msp} then 'sendmail'
         when ts_format = 'exim' or program = 'exim' or program = 'exim4' then 'exim'
         when ts_format = 'tai64n' then 'qmail' end as fam,
    {d.strpos("message", _q(": "))} as c2
  from s9
), s11 as (
  select *, case when c2 between 7 and 32 then substr(message, 1, c2 - 1) end as cand from s10
), s12 as (
  select *,
    case when fam = 'postfix' and {d.full_match("cand", RX_POSTFIX_QID)} then cand
         when fam = 'sendmail' and {d.full_match("cand", RX_SENDMAIL_QID)} then cand
    end as qid
  from s11
), s13 as (
  select *,
    qid is not null or (fam = 'postfix' and cand = 'NOQUEUE') as has_q,
    case when fam = 'exim' then {d.rxs("message", RX_EXIM_ID, ["id", "flag", "rest"])} end as ex
  from s12
), s14 as (
  select *, case when has_q then substr(message, c2 + 2) else message end as b from s13
), k as (
  select *, {_kind_sql(d)} as kind from s14
), kk as (
  select *, {_kc_sql()} as kc from k
), p as (
  select *,
    case when {_kc_test("postfix", ["delivery"])} then {d.rxs("b", RX_DELIVERY, DELIVERY_FIELDS)} end as dvr,
    case {" ".join(f"when {_kc_test('postfix', [k])} then {e}" for k, e in _aux(d).items())} end as aux,
    case when {_kc_test("postfix", ["disconnect"])}
         then substr(b, nullif({d.strpos("b", _q(" commands="))}, 0) + 10) end as cs,
    case when {_kc_test("postfix", ["qmgr_from"])} and not ({_qf_ok(d)})
         then {d.rxs("b", RX_QMGR_FROM, ["from", "size", "nrcpt"])} end as qfr,
    case when {_kc_test("postfix", REJECT_KIND_LIST)}
         then {d.rxs("b", RX_REPLY, ["code", "enh", "text"])} end as rpr
  from kk
)
select
  line_no,
  case ts_format when 'syslog' then {syslog_ts} when 'rfc3339' then {rfc_ts}
                 when 'exim' then {exim_ts} when 'tai64n' then {tai_ts} end as ts,
  ts_format, host, program, pid,
  case when fam = 'exim' then ex.id
       when fam = 'qmail' then {qmail_msg}
       else qid end as queue_id,
  kind,
  {("," + chr(10) + "  ").join(o for o in out if o.split(" ")[0] not in head and o not in head)},
  case when kind in ('__noise', '__quarantine') then line else message end as message
from p
"""


_PARSE_SQL = _build_sql()


class MaillogParser(Parser):
    format = "maillog"
    version = "1.0.0"
    tables = {"maillog": COLUMNS}

    def sniff(self, head: str, name: str) -> int:
        lines = [ln for ln in head.splitlines()[:200] if ln.strip()]
        if not lines:
            return 0
        sample = "\n".join(lines)
        hits = sum(1 for _ in _SNIFF_SYSLOG.finditer(sample)) + sum(1 for _ in _SNIFF_EXIM.finditer(sample))
        hits += sum(1 for _ in _SNIFF_QMAIL.finditer(sample))
        share = hits / len(lines)
        if share >= 0.5:
            return 95
        if share > 0.1:
            return 80
        if hits and re.search(r"(?:mail|maillog|main)\.?log|maillog", name.lower()):
            return 60
        return 0

    # -- per-line view ----------------------------------------------------------------
    def parse(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Ledger:
        import duckdb
        import pyarrow as pa

        pairs = list(lines)
        con = duckdb.connect()
        try:
            _create_tables(con)
            tbl = pa.table(
                {
                    "line_no": pa.array([n for n, _ in pairs], pa.int64()),
                    "line": pa.array([t.rstrip("\r\n") for _, t in pairs], pa.large_string()),
                    "bad": pa.array([False] * len(pairs), pa.bool_()),
                }
            )
            con.register("_ml_arrow", tbl)
            year = ctx.year or datetime.now(UTC).year
            _land_from(con, 0, "select line_no, line, bad from _ml_arrow", year, ctx)
            ledger = Ledger()
            cur = con.execute(f"select line_no, {', '.join(COLUMN_NAMES)} from raw.maillog order by line_no")
            names = ["line_no", *COLUMN_NAMES]
            for row in cur.fetchall():
                rec = dict(zip(names, row, strict=True))
                line_no = rec.pop("line_no")
                fields = {k: (v.isoformat(sep=" ") if isinstance(v, datetime) else v) for k, v in rec.items()}
                ledger.add("maillog", line_no, 0, **fields)
            for line_no, kind, text in con.execute("select line_no, kind, text from raw.noise").fetchall():
                ledger.add_noise(line_no, 0, kind, text)
            for line_no, reason, text in con.execute(
                "select line_no, reason, text from raw.quarantine"
            ).fetchall():
                ledger.add_quarantine(line_no, 0, reason, text)
            return ledger
        finally:
            con.close()

    # -- bulk landing ------------------------------------------------------------------
    def land(
        self, con: duckdb.DuckDBPyConnection, file_id: int, source: FileSource, ctx: ParseContext
    ) -> LineCounts:
        year = ctx.year or datetime.fromtimestamp(Path(source.path).stat().st_mtime, UTC).year
        with _plain_text(Path(source.path), source.rel_path) as (plain, odd):
            if not odd:
                counts = _land_csv(con, file_id, plain, year, ctx)
                if counts is not None:
                    return counts
            return _land_arrow(con, file_id, plain.read_bytes(), year, ctx)


def write_lines_parquet(path_in: Path, path_out: Path) -> int:
    """Write the (line_no BIGINT, line VARCHAR, bad BOOLEAN) rows land() parses from
    `path_in` (plain or gzip) to the Parquet file `path_out`; returns the line count.

    The input of the Spark parse (maillog_spark): the same reader, the same fallback for
    CR/NUL bytes and rejected lines, so both engines see the very same lines.
    """
    import duckdb

    con = duckdb.connect()
    try:
        with _plain_text(Path(path_in), Path(path_in).name) as (plain, odd):
            copy_to = f"to {_q(str(path_out))} (format parquet)"
            if not odd:
                n = con.execute(f"copy ({_csv_lines_sql(plain)}) {copy_to}").fetchone()[0]
                if not con.execute("select count(*) from _maillog_rejects").fetchone()[0]:
                    return n
            con.register("_ml_arrow", _split_lines(plain.read_bytes()))
            return con.execute(f"copy (select line_no, line, bad from _ml_arrow) {copy_to}").fetchone()[0]
    finally:
        con.close()


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------
def _create_tables(con) -> None:
    from ingest.landing import CORE_DDL, PROVENANCE

    con.execute("create schema if not exists raw")
    con.execute(f"create table if not exists raw.maillog ({PROVENANCE}, {COLUMNS})")
    for t in ("noise", "quarantine"):
        con.execute(f"create table if not exists raw.{t} ({CORE_DDL[t]})")


def _has_cr_or_nul(path: Path) -> bool:
    if path.stat().st_size == 0:
        return False
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        return mm.find(b"\r") >= 0 or mm.find(b"\x00") >= 0


def _gunzip_scan(src: Path, dst: Path) -> bool:
    """Decompress src to dst; True if the data holds CR or NUL bytes."""
    odd = False
    with gzip.open(src, "rb") as fin, dst.open("wb") as fout:
        while chunk := fin.read(1 << 22):
            if not odd and (b"\r" in chunk or b"\x00" in chunk):
                odd = True
            fout.write(chunk)
    return odd


@contextmanager
def _plain_text(path: Path, name: str) -> Iterator[tuple[Path, bool]]:
    """The file as plain text on disk (gunzipped into a temporary directory when needed)
    and whether it holds CR or NUL bytes, which DuckDB's line reader would split or cut on."""
    from ingest.source import GZIP_MAGIC, BadInput

    with path.open("rb") as fh:
        is_gzip = fh.read(2) == GZIP_MAGIC
    if not is_gzip:
        if name.endswith(".gz"):
            raise BadInput("named .gz but is not gzip data")
        yield path, _has_cr_or_nul(path)
        return
    tmp = Path(tempfile.mkdtemp(prefix="maillog-"))
    try:
        plain = tmp / "maillog.txt"
        try:
            odd = _gunzip_scan(path, plain)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise BadInput(f"corrupt or truncated gzip: {exc}") from exc
        yield plain, odd
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _csv_lines_sql(path: Path) -> str:
    """(line_no, line, bad) from DuckDB's reader; rejected lines go to _maillog_rejects
    (then the line numbers are off and the caller falls back to _split_lines)."""
    return (
        f"select ordinality::bigint as line_no, line, false as bad from read_csv({_q(str(path))}, "
        f"{READ_OPTS}, ignore_errors=true, store_rejects=true, rejects_table='_maillog_rejects', "
        f"rejects_scan='_maillog_reject_scans') with ordinality"
    )


def _land_csv(con, file_id: int, path: Path, year: int, ctx: ParseContext) -> LineCounts | None:
    """Fast path: DuckDB's reader. None if it rejected any line (caller falls back)."""
    counts = _land_from(con, file_id, _csv_lines_sql(path), year, ctx)
    rejected = con.execute("select count(*) from _maillog_rejects").fetchone()[0]
    if rejected:
        for t in ("maillog", "noise", "quarantine"):
            con.execute(f"delete from raw.{t} where file_id = ?", [file_id])
        return None
    return counts


def _split_lines(data: bytes) -> pa.Table:
    """(line_no, line, bad) by an exact LF split with numpy; lines that are not UTF-8 are
    flagged `bad` (quarantined), NUL shows as U+2400, a trailing CR is dropped."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if data and not data.endswith(b"\n"):
        data += b"\n"
    buf = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(buf == 10)
    n = len(ends)
    offsets = np.empty(n + 1, dtype=np.int64)
    offsets[0] = 0
    offsets[1:] = ends + 1
    raw = pa.LargeBinaryArray.from_buffers(
        pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )
    text = data.decode("utf-8", errors="replace").replace("\x00", "\u2400")
    lines = text.split("\n")[:n]
    arr = pa.array(lines, pa.large_string())
    bad = np.zeros(n, dtype=bool)
    cand = np.flatnonzero(pc.match_substring(arr, "\ufffd").to_numpy(zero_copy_only=False))
    for i in cand:  # only lines already showing U+FFFD: was it in the bytes, or a decode failure?
        try:
            raw[int(i)].as_py().decode("utf-8")
        except UnicodeDecodeError:
            bad[i] = True
    arr = pc.utf8_rtrim(arr, characters="\r\n")
    return pa.table({"line_no": pa.array(np.arange(1, n + 1, dtype=np.int64)), "line": arr, "bad": bad})


def _land_arrow(con, file_id: int, data: bytes, year: int, ctx: ParseContext) -> LineCounts:
    """Files DuckDB's reader cannot split right: the exact split of _split_lines."""
    con.register("_ml_arrow", _split_lines(data))
    try:
        return _land_from(con, file_id, "select line_no, line, bad from _ml_arrow", year, ctx)
    finally:
        con.unregister("_ml_arrow")


def _sql_for(src_sql: str, year: int, ctx: ParseContext, dialect: str | Dialect = "duckdb") -> str:
    d = dialect_for(dialect)
    month_us = [
        int((datetime(int(year), m, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds())
        * 1_000_000
        for m in range(1, 13)
    ]
    return (
        (_PARSE_SQL if d is DUCKDB else _build_sql(d))
        .replace("_src", f"({src_sql})", 1)
        .replace("$month_us", d.bigint_array(month_us))
        .replace("$offset", d.bigint(int(ctx.utc_offset_minutes)))
    )


def _land_from(con, file_id: int, src_sql: str, year: int, ctx: ParseContext) -> LineCounts:
    cols = ", ".join(COLUMN_NAMES)
    sql = _sql_for(src_sql, year, ctx)
    total = con.execute(
        f"insert into raw.maillog (file_id, line_no, item_no, {cols}) "
        f"select {int(file_id)}, line_no, 0, {cols} from ({sql})"
    ).fetchone()[0]
    noise = con.execute(
        "insert into raw.noise (file_id, line_no, item_no, kind, text) "
        "select file_id, line_no, 0, detail, message from raw.maillog where file_id = ? and kind = '__noise'",
        [file_id],
    ).fetchone()[0]
    quarantined = con.execute(
        "insert into raw.quarantine (file_id, line_no, item_no, reason, text) "
        "select file_id, line_no, 0, detail, message from raw.maillog "
        "where file_id = ? and kind = '__quarantine'",
        [file_id],
    ).fetchone()[0]
    if noise or quarantined:
        con.execute(
            "delete from raw.maillog where file_id = ? and kind in ('__noise', '__quarantine')", [file_id]
        )
    _fix_years(con, file_id, year, ctx)
    return LineCounts(total, total - noise - quarantined, noise, quarantined)


def _fix_years(con, file_id: int, year: int, ctx: ParseContext) -> None:
    """Year-less stamps: a January run whose log opens in December starts a year earlier;
    a jump of six or more months back between consecutive lines (Dec -> Jan) adds a year,
    a jump forward (a late Dec line after Jan) takes it back."""
    off = int(ctx.utc_offset_minutes)
    row = con.execute(
        "select max(month(ts + to_minutes(?))) - min(month(ts + to_minutes(?))), "
        "arg_min(month(ts + to_minutes(?)), line_no) "
        "from raw.maillog where file_id = ? and ts_format = 'syslog' and ts is not null",
        [off, off, off, file_id],
    ).fetchone()
    month_span, first_month = row
    ref = ctx.start_utc or ctx.run_date
    shift0 = -1 if (ref is not None and ref.month == 1 and first_month == 12) else 0
    # a shift needs two months six or more apart: without them (and shift0) nothing moves
    if month_span is None or (month_span < 6 and shift0 == 0):
        return
    con.execute(
        f"""
        update raw.maillog m set ts = m.ts + to_years(y.shift::integer)
        from (
          select line_no, {shift0}
                 + sum(case when prev - mon >= 6 then 1 when mon - prev >= 6 then -1 else 0 end)
                 over (order by line_no rows unbounded preceding) as shift
          from (select line_no, month(ts + to_minutes({off})) as mon,
                       lag(month(ts + to_minutes({off}))) over (order by line_no) as prev
                from raw.maillog where file_id = ? and ts_format = 'syslog' and ts is not null)
        ) y
        where m.file_id = ? and m.line_no = y.line_no and y.shift <> 0
        """,
        [file_id, file_id],
    )
