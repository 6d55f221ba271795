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
in-memory DuckDB.

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
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.ledger import Ledger, LineCounts
from ingest.parsers.base import ParseContext, Parser

if TYPE_CHECKING:
    import duckdb

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


def rx(expr: str, pattern: str, group: int = 1) -> str:
    """Group `group` of `pattern` in `expr`, NULL when it does not match or is empty."""
    return f"nullif(regexp_extract({expr}, {_q(pattern)}, {group}), '')"


def rxs(expr: str, pattern: str, names: list[str]) -> str:
    return f"regexp_extract({expr}, {_q(pattern)}, {names!r})"


def num(expr: str, typ: str = "integer") -> str:
    return f"try_cast({expr} as {typ})"


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


def _secs(expr: str, pattern: str, weights: tuple[int, ...] = (86400, 3600, 60, 1)) -> str:
    """Durations (Exim 1h2m3s, Sendmail [d+]hh:mm:ss) in seconds; NULL if no match."""
    terms = " + ".join(
        f"coalesce(try_cast(nullif(regexp_extract({expr}, {_q(pattern)}, {g}), '') as double), 0) * {w}"
        for g, w in enumerate(weights, start=1)
    )
    return f"(case when regexp_matches({expr}, {_q(pattern)}) then {terms} end)"


_TYPES = {c.strip().split(" ")[0]: c.strip().split(" ")[1] for c in COLUMNS.split(",")}

# Fast string-function forms of the hottest Postfix extractions (same values as the regexes
# they replace on Postfix's own line shapes)
_UPTO = "(case when strpos({s}, '{c}') > 0 then left({s}, strpos({s}, '{c}') - 1) else {s} end)"


def upto(expr: str, ch: str) -> str:
    """`expr` up to (without) the first `ch`: split_part(expr, ch, 1), but cheaper."""
    return _UPTO.format(s=expr, c=ch)


# `aux` (p layer): the text after the fixed prefix of the hot Postfix kinds
_AUX = {
    "disconnect": "substr(b, 17)",
    "client": "substr(b, 8)",
    "message_id": (
        "substr(b, strpos(b, 'message-id=') + 11 "
        "+ (substr(b, strpos(b, 'message-id=') + 11, 1) = '<')::integer)"
    ),
    "qmgr_from": "substr(b, 7)",
}
_DC_CMDS = "case when strpos(aux, ' ') > 1 then nullif(substr(aux, strpos(aux, ' ') + 1), '') end"
_DC_OK = "try_cast(" + upto("cs", "/") + " as integer)"
# qmgr `from=<..>, size=N, nrcpt=N`: string functions when the shape is plain, else the regex
_QF_OK = "substr(b, strpos(b, '>'), 8) = '>, size=' and contains(b, ', nrcpt=')"

# Per-kind field expressions: (group name, guard, {kind or '*': {field: expr}}); each output
# column is one CASE over them (_column_sql). `b` = message after the queue id.
GROUPS: list[tuple[str, tuple[str | None, list[str] | None], dict[str, dict[str, str]]]] = [
    (
        "pdv",  # Postfix delivery lines
        ("postfix", ["delivery"]),
        {
            "*": {
                "recipient": "nullif(dvr.to, '')",
                "orig_to": "nullif(dvr.orig_to, '')",
                "relay": "nullif(dvr.relay, '')",
                "conn_use": "try_cast(nullif(dvr.conn_use, '') as integer)",
                "delay": "try_cast(nullif(dvr.delay, '') as double)",
                "delay_before_qmgr": "try_cast(nullif(dvr.d1, '') as double)",
                "delay_in_qmgr": "try_cast(nullif(dvr.d2, '') as double)",
                "delay_conn_setup": "try_cast(nullif(dvr.d3, '') as double)",
                "delay_transmission": "try_cast(nullif(dvr.d4, '') as double)",
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
                "sender": f"case when {_QF_OK} then left(aux, strpos(aux, '>') - 1) else qfr['from'] end",
                "size": f"try_cast(case when {_QF_OK} then substr(b, strpos(b, '>') + 8, "
                "strpos(b, ', nrcpt=') - strpos(b, '>') - 8) else qfr['size'] end as bigint)",
                "nrcpt": f"try_cast(case when {_QF_OK} "
                "then split_part(substr(b, strpos(b, ', nrcpt=') + 8), ' ', 1) "
                "else qfr['nrcpt'] end as integer)",
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
                "smtp_code": "try_cast(nullif(rpr.code, '') as integer)",
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
            "client": {"client": f"nullif({upto('aux', ',')}, '')"},
            "message_id": {"message_id": f"nullif({upto('aux', '>')}, '')"},
            "removed": {},
            "connect": {"client": "substr(b, 14)"},
            "disconnect": {
                "client": upto("aux", " "),
                "commands": _DC_CMDS,
                "commands_ok": _DC_OK,
                "commands_total": "coalesce(case when strpos(cs, '/') > 0 "
                "then try_cast(nullif(split_part(cs, '/', 2), '') "
                f"as integer) end, {_DC_OK})",
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
                "size": num(rx("b", r", size=(\d+)"), "bigint"),
                "nrcpt": num(rx("b", r", nrcpts=(\d+)")),
                "message_id": rx("b", r", msgid=<?([^>,]*)>?"),
                "proto": rx("b", r", proto=([^,]+)"),
                "client": rx("b", r", relay=(.*?)(?:, [a-z]+=|$)"),
            },
            "delivery": {
                "recipient": f"trim({rx('b', r'^to=(.*?), [a-z_]+=')}, '<>')",
                "relay": rx("b", r", relay=([^,]*)"),
                "mailer": rx("b", r", mailer=([^,]*)"),
                "delay": _secs(rx("b", r", delay=([\d:+]+)"), RX_SM_DELAY),
                "delay_transmission": _secs(rx("b", r", xdelay=([\d:+]+)"), RX_SM_DELAY),
                "dsn": rx("b", r", dsn=([\d.]+)"),
                "status": (
                    "case when regexp_matches(b, ', stat=Sent\\b') then 'sent' "
                    "when regexp_matches(b, ', stat=Deferred\\b') then 'deferred' "
                    "when regexp_matches(b, ', stat=queued\\b') then 'queued' else 'bounced' end"
                ),
                "status_text": rx("b", r", stat=(.*)$"),
            },
            "reject": {
                "reject_action": "'reject'",
                "reject_stage": (
                    f"case {rx('b', r'ruleset=([^,]+)')} when 'check_rcpt' then 'RCPT' when 'check_mail' "
                    f"then 'MAIL' when 'check_relay' then 'CONNECT' else {rx('b', r'ruleset=([^,]+)')} end"
                ),
                "client": rx("b", r", relay=(.*?)(?:, [a-z]+=|$)"),
                "sender": (
                    f"case when contains(b, 'ruleset=check_mail') then {rx('b', r', arg1=<?([^>,]*)>?')} end"
                ),
                "recipient": (
                    f"case when contains(b, 'ruleset=check_rcpt') then {rx('b', r', arg1=<?([^>,]*)>?')} end"
                ),
                "smtp_code": num(rx("b", RX_SM_REJECT, 1)),
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
                "sender": "trim(split_part(ex.rest, ' ', 1), '<>')",
                "client": rx("ex.rest", RX_EXIM_HOST),
                "size": num(rx("ex.rest", r" S=(\d+)"), "bigint"),
                "message_id": rx("ex.rest", r" id=(\S+)"),
                "proto": rx("ex.rest", r" P=(\S+)"),
                "related_queue_id": rx("ex.rest", r" R=(\S+)"),
            },
            "delivery": {
                "recipient": "split_part(ex.rest, ' ', 1)",
                "orig_to": rx("ex.rest", r"^\S+ (?:\([^)]*\) )?<([^>]+)>"),
                "relay": rx("ex.rest", r" H=(\S+(?: \[[^\]]*\](?::\d+)?)?)"),
                "mailer": rx("ex.rest", r" T=(\S+)"),
                "delay": _secs(rx("ex.rest", r" QT=(\S+)"), RX_EXIM_DUR),
                "delay_transmission": _secs(rx("ex.rest", r" DT=(\S+)"), RX_EXIM_DUR),
                "status": "case ex.flag when '**' then 'bounced' when '==' then 'deferred' else 'sent' end",
                "status_text": (
                    "case when ex.flag in ('**', '==') then "
                    + rx("ex.rest", r": (.*)$")
                    + " else "
                    + rx("ex.rest", r' C="(.*)"')
                    + " end"
                ),
                "smtp_code": (
                    "case when ex.flag in ('**', '==') then "
                    + num(
                        rx("ex.rest", r": (?:SMTP error from remote mail server after [^:]*: )?(\d{3})[ -]")
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
                "smtp_code": num(rx("message", r": (\d{3}) ")),
            },
        },
    ),
    (
        "qml",  # qmail-send via multilog
        ("qmail", None),
        {
            "from": {
                "sender": rx("message", r" from <([^>]*)>"),
                "size": num(rx("message", r": bytes (\d+)"), "bigint"),
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
                    "case when trim(line) = '' then 'blank' when trim(message) = '-- MARK --' "
                    "then 'syslog_mark' else 'syslog_repeat' end"
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


def _column_sql(col: str) -> str:
    """One CASE per output column over the kind codes of the groups that define it."""
    typ = _TYPES[col]
    whens: list[str] = []
    for _, (fam, kinds), fields in GROUPS:
        if "*" in fields:
            if col in fields["*"]:
                whens.append(f"when {_kc_test(fam, kinds)} then ({fields['*'][col]})::{typ}")
            continue
        by_expr: dict[str, list[str]] = {}
        for k, d in fields.items():
            if col in d:
                by_expr.setdefault(d[col], []).append(k)
        for expr, ks in by_expr.items():
            whens.append(f"when {_kc_test(fam, ks)} then ({expr})::{typ}")
    if not whens:
        return f"NULL::{typ} as {col}"
    return f"case {' '.join(whens)} end as {col}"


def _kind_sql() -> str:
    return f"""case
      when bad then '__quarantine'
      when ts_format is null then (case when trim(line) = '' then '__noise' else '__quarantine' end)
      when fam = 'postfix' then (case
        when starts_with(b, 'to=<') and contains(b, ', status=') then 'delivery'
        when starts_with(b, 'connect from ') then 'connect'
        when starts_with(b, 'disconnect from ') then 'disconnect'
        when starts_with(b, 'client=') then 'client'
        when starts_with(b, 'message-id=') or starts_with(b, 'resent-message-id=') then 'message_id'
        when b = 'removed' then 'removed'
        when starts_with(b, 'from=<') and contains(b, ', size=') then 'qmgr_from'
        when starts_with(b, 'from=<') and contains(b, ', status=expired') then 'expired'
        when has_q and regexp_matches(b, {_q(RX_REJECT_ACTION)}) then (
          case split_part(b, ':', 1)
            when 'reject' then 'reject' when 'milter-reject' then 'reject'
            when 'reject_warning' then 'reject_warning'
            when 'warning' then (case when regexp_matches(b, {_q(RX_CLEANUP_CHECK)})
                                      then 'reject_warning' else 'warning' end)
            when 'hold' then 'hold' when 'milter-hold' then 'hold'
            else 'discard' end)
        when qid is not null and (starts_with(b, 'uid=') or starts_with(b, 'sender=')) then 'pickup'
        when regexp_matches(b, '^(?:sender|postmaster) non-delivery notification: ') then 'bounce_notice'
        when starts_with(b, 'sender delay notification: ') then 'defer_notice'
        when starts_with(b, 'sender delivery status notification: ') then 'dsn_notice'
        when regexp_matches(b, '^(?:warning|error|fatal|panic): ') then split_part(b, ':', 1)
        when starts_with(b, 'lost connection after ') then 'lost_connection'
        when starts_with(b, 'timeout after ') then 'timeout'
        when starts_with(b, 'connect to ') then 'connect_error'
        when ends_with(program, '/master') then 'master'
        when ends_with(program, '/anvil') then 'anvil'
        when ends_with(program, '/postscreen') then 'postscreen'
        when ends_with(program, '/scache') then 'scache'
        when ends_with(program, '/pickup') then 'pickup'
        when ends_with(program, 'postfix-script') or program = 'postfix' then 'script'
        else 'other' end)
      when program is null and (trim(message) = '-- MARK --'
           or regexp_matches(message, '^(?:last message repeated \\d+ times|message repeated \\d+ times)'))
        then '__noise'
      when fam = 'sendmail' then (case
        when starts_with(b, 'from=') then 'from'
        when starts_with(b, 'to=') and contains(b, ', stat=') then 'delivery'
        when starts_with(b, 'ruleset=') and contains(b, ', reject=') then 'reject'
        when starts_with(b, 'SYSERR') then 'error'
        else 'other' end)
      when fam = 'exim' then (case
        when ex.flag = '<=' then 'arrival'
        when ex.flag in ('=>', '->', '*>', '**', '==') then 'delivery'
        when ex.flag = 'Completed' then 'removed'
        when regexp_matches(message, ' rejected (?:RCPT|MAIL|EHLO|HELO|VRFY|after DATA|connection)')
          then 'reject'
        when regexp_matches(message, '^(?:Start|End) queue run') then 'queue_run'
        when regexp_matches(message, '^exim \\S+ daemon started') then 'master'
        else 'other' end)
      when fam = 'qmail' then (case
        when starts_with(message, 'new msg ') then 'new_msg'
        when starts_with(message, 'info msg ') then 'from'
        when starts_with(message, 'starting delivery ') then 'delivery_start'
        when regexp_matches(message, '^delivery \\d+: ') then 'delivery'
        when starts_with(message, 'end msg ') then 'removed'
        when starts_with(message, 'bounce msg ') then 'bounce_notice'
        when starts_with(message, 'status: ') then 'status'
        else 'other' end)
      else 'other'
    end"""


_QMAIL_MSG = rx("message", r"msg (\d+)")


def _build_sql() -> str:
    """SELECT over `_src(line_no, line, bad)` yielding line_no and the raw.maillog columns.

    Noise and quarantine lines come out with kind '__noise' / '__quarantine' (detail =
    noise kind or reason, message = the whole line); land() moves them to their tables.
    Placeholders (_sql_for fills them in as literals: parameters in per-row expressions are
    slow): $month_us (epoch microseconds of the 1st of each month of the base year of
    year-less stamps), $offset (minutes, local = UTC + offset).
    """
    head = {"ts", "ts_format", "host", "program", "pid", "queue_id", "kind", "message"}
    out = [c if c in head else _column_sql(c) for c in COLUMN_NAMES]
    syslog_ts = (
        "make_timestamp($month_us[(strpos('JanFebMarAprMayJunJulAugSepOctNovDec', "
        "substr(line, 1, 3)) + 2) // 3]"
        " + ((cast(trim(substr(line, 5, slen - 13)) as bigint) - 1) * 86400"
        " + coalesce(epoch(try_cast(substr(line, slen - 7, 8) as time))::bigint,"
        " cast(substr(line, slen - 7, 2) as bigint) * 3600"
        " + cast(substr(line, slen - 4, 2) as bigint) * 60 + cast(substr(line, slen - 1, 2) as bigint))"
        " - $offset * 60) * 1000000)"
    )
    rfc_ts = (
        f"try_cast(regexp_replace(substr(line, 1, slen), {_q(RX_RFC3339_ZONE)}, '') as timestamp)"
        " - to_minutes("
        "case when substr(line, slen, 1) = 'Z' then 0 "
        "else (case substr(line, slen - 5, 1) when '-' then -1 else 1 end) * coalesce("
        "try_cast(substr(line, slen - 4, 2) as bigint) * 60"
        " + try_cast(substr(line, slen - 1, 2) as bigint), 0) end)"
    )
    exim_ts = (
        "try_cast(exh.st as timestamp) - to_minutes(case when exh.sg = '' then $offset "
        "else (case when exh.sg = '-' then -1 else 1 end) * (try_cast(exh.zh as bigint) * 60 "
        "+ try_cast(exh.zm as bigint)) end)"
    )
    tai_ts = (
        f"make_timestamp((('0x' || substr(line, 2, 16))::bigint - {TAI64_UNIX}) * 1000000"
        " + ('0x' || substr(line, 18, 8))::bigint // 1000)"
    )
    return f"""
with s1 as (
  select line_no, coalesce(line, '') as line, bad,
    case when bad then null
         when regexp_matches(line, {_q(RX_SYSLOG)}) then 'syslog'
         when regexp_matches(line, {_q(RX_RFC3339)}) then 'rfc3339'
         when regexp_matches(line, {_q(RX_EXIM_STAMP)}) then 'exim'
         when regexp_matches(line, {_q(RX_TAI64)}) then 'tai64n'
    end as ts_format
  from _src
), s2 as (
  select *,
    case ts_format when 'syslog' then (case when substr(line, 6, 1) = ' ' then 14 else 15 end)
                   when 'rfc3339' then strpos(line, ' ') - 1 end as slen,
    case when ts_format = 'exim'
         then {rxs("line", RX_EXIM_HEAD, ["st", "sg", "zh", "zm", "pid", "msg"])} end as exh
  from s1
), s3 as (
  select *, substr(line, slen + 2) as rest from s2
), s4 as (
  select *, strpos(rest, ' ') as sp from s3
), s5 as (
  select *, case when sp > 0 then substr(rest, sp + 1) end as body from s4
), s6 as (
  select *, strpos(body, ': ') as colon from s5
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
    case when tag is not null then {upto("tag", "[")}
         when ts_format = 'exim' then 'exim'
         when ts_format = 'tai64n' then 'qmail' end as program,
    case when ends_with(tag, ']') and strpos(tag, '[') > 0
         then try_cast(substr(tag, strpos(tag, '[') + 1, length(tag) - strpos(tag, '[') - 1) as integer)
         when ts_format = 'exim' then try_cast(exh.pid as integer) end as pid,
    case when tag is not null then substr(body, colon + 2)
         when ts_format = 'exim' then exh.msg
         when ts_format = 'tai64n' then substr(line, 27)
         else body end as message
  from s8
), s10 as (
  select *,
    case when starts_with(program, 'postfix') then 'postfix'
         when program = 'sendmail' or program = 'sm-mta' or starts_with(program, 'sm-msp') then 'sendmail'
         when ts_format = 'exim' or program = 'exim' or program = 'exim4' then 'exim'
         when ts_format = 'tai64n' then 'qmail' end as fam,
    strpos(message, ': ') as c2
  from s9
), s11 as (
  select *, case when c2 between 7 and 32 then substr(message, 1, c2 - 1) end as cand from s10
), s12 as (
  select *,
    case when fam = 'postfix' and regexp_full_match(cand, {_q(RX_POSTFIX_QID)}) then cand
         when fam = 'sendmail' and regexp_full_match(cand, {_q(RX_SENDMAIL_QID)}) then cand
    end as qid
  from s11
), s13 as (
  select *,
    qid is not null or (fam = 'postfix' and cand = 'NOQUEUE') as has_q,
    case when fam = 'exim' then {rxs("message", RX_EXIM_ID, ["id", "flag", "rest"])} end as ex
  from s12
), s14 as (
  select *, case when has_q then substr(message, c2 + 2) else message end as b from s13
), k as (
  select *, {_kind_sql()} as kind from s14
), kk as (
  select *, {_kc_sql()} as kc from k
), p as (
  select *,
    case when {_kc_test("postfix", ["delivery"])} then {rxs("b", RX_DELIVERY, DELIVERY_FIELDS)} end as dvr,
    case {" ".join(f"when {_kc_test('postfix', [k])} then {e}" for k, e in _AUX.items())} end as aux,
    case when {_kc_test("postfix", ["disconnect"])}
         then substr(b, nullif(strpos(b, ' commands='), 0) + 10) end as cs,
    case when {_kc_test("postfix", ["qmgr_from"])} and not ({_QF_OK})
         then {rxs("b", RX_QMGR_FROM, ["from", "size", "nrcpt"])} end as qfr,
    case when {_kc_test("postfix", REJECT_KIND_LIST)}
         then {rxs("b", RX_REPLY, ["code", "enh", "text"])} end as rpr
  from kk
)
select
  line_no,
  case ts_format when 'syslog' then {syslog_ts} when 'rfc3339' then {rfc_ts}
                 when 'exim' then {exim_ts} when 'tai64n' then {tai_ts} end as ts,
  ts_format, host, program, pid,
  case when fam = 'exim' then ex.id
       when fam = 'qmail' then {_QMAIL_MSG}
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
        from ingest.source import BadInput

        year = ctx.year or datetime.fromtimestamp(Path(source.path).stat().st_mtime, UTC).year
        tmp = None
        try:
            path = Path(source.path)
            if source.is_gzip:
                tmp = Path(tempfile.mkdtemp(prefix="maillog-"))
                plain = tmp / "maillog.txt"
                try:
                    odd = _gunzip_scan(path, plain)
                except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                    raise BadInput(f"corrupt or truncated gzip: {exc}") from exc
            else:
                if source.rel_path.endswith(".gz"):
                    raise BadInput("named .gz but is not gzip data")
                plain = path
                odd = _has_cr_or_nul(plain)
            if not odd:
                counts = _land_csv(con, file_id, plain, year, ctx)
                if counts is not None:
                    return counts
            return _land_arrow(con, file_id, plain.read_bytes(), year, ctx)
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)


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


def _land_csv(con, file_id: int, path: Path, year: int, ctx: ParseContext) -> LineCounts | None:
    """Fast path: DuckDB's reader. None if it rejected any line (caller falls back)."""
    src = (
        f"select ordinality::bigint as line_no, line, false as bad from read_csv({_q(str(path))}, "
        f"{READ_OPTS}, ignore_errors=true, store_rejects=true, rejects_table='_maillog_rejects', "
        f"rejects_scan='_maillog_reject_scans') with ordinality"
    )
    counts = _land_from(con, file_id, src, year, ctx)
    rejected = con.execute("select count(*) from _maillog_rejects").fetchone()[0]
    if rejected:
        for t in ("maillog", "noise", "quarantine"):
            con.execute(f"delete from raw.{t} where file_id = ?", [file_id])
        return None
    return counts


def _land_arrow(con, file_id: int, data: bytes, year: int, ctx: ParseContext) -> LineCounts:
    """Exact LF split with numpy; lines that are not UTF-8 are flagged `bad` (quarantined)."""
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
    tbl = pa.table({"line_no": pa.array(np.arange(1, n + 1, dtype=np.int64)), "line": arr, "bad": bad})
    con.register("_ml_arrow", tbl)
    try:
        return _land_from(con, file_id, "select line_no, line, bad from _ml_arrow", year, ctx)
    finally:
        con.unregister("_ml_arrow")


def _sql_for(src_sql: str, year: int, ctx: ParseContext) -> str:
    month_us = [
        int((datetime(int(year), m, 1, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds())
        * 1_000_000
        for m in range(1, 13)
    ]
    return (
        _PARSE_SQL.replace("_src", f"({src_sql})", 1)
        .replace("$month_us", "([" + ", ".join(map(str, month_us)) + "]::bigint[])")
        .replace("$offset", f"{int(ctx.utc_offset_minutes)}::bigint")
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
