"""Recorded Postfix and Dovecot log variants (samples/variants/*, scripts/record/postfix_variants.sh):
other stamps and containers (rsyslog RFC 3164 / RFC 3339, journalctl short-iso and json), long
queue ids, postscreen, TLS, SASL, a milter, header_checks, address verification, bounces,
expiry, anvil, Dovecot's default and custom log prefixes; and Dovecot 2.4's default format, recorded
on Debian 13 (tests/fixtures/recorded/dovecot-24-default). Each variant's log is read through the
project's detection and parse; the oracles are regexes over the raw lines written here and the
pflogsumm output saved beside the recording (tests/fixtures/oracles/<variant>/pflogsumm.txt)."""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES, SAMPLES, found

from ingest.detect import detect
from ingest.line_guard import parse_guarded
from ingest.parsers import ParseContext, get_parser
from ingest.source import FileSource
from ingest.value_fit import fit_ledger

LOG_NAMES = ("maillog.gz", "maillog.json.gz", "dovecot.log.gz")
# the Debian 12 variants, and Dovecot 2.4 (Debian 13) recorded as a fixture
LOGS = found(
    [p for name in LOG_NAMES for p in SAMPLES.glob(f"variants/*/{name}")]
    + list(FIXTURES.glob("recorded/dovecot-*/dovecot.log.gz")),
    "variant logs",
)
IDS = [
    p.parent.name + ("-dovecot" if p.name == "dovecot.log.gz" and (p.parent / "maillog.gz").exists() else "")
    for p in LOGS
]
TOTALS = ("received", "delivered", "deferred", "bounced", "rejected")

# programs this project reads: their lines must not be filed as 'other'
KNOWN_PROGRAM = re.compile(r"^(?:postfix(?:-[^/]+)?(?:/.*)?|dovecot|opendkim)$")
# a Postfix queue id as the line's first field after the tag: short (hex) or long (base 52)
QUEUE_ID = re.compile(r"^([0-9A-F]{6,12}|[0-9B-DF-HJ-NP-TV-Zb-df-hj-np-tv-z]{10,}): ")
# the line's tag and message, as syslog text or as a journal export object
SYSLOG_BODY = re.compile(r"^\S+ \S+ ([^\s:\[]+)(?:\[\d+\])?: (.*)$")
SYSLOG_3164 = re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ ([^\s:\[]+)(?:\[\d+\])?: (.*)$")


def raw_lines(path: Path) -> list[tuple[str, str]]:
    """(program, message) of each raw line, by regex or json.loads: independent of the parser."""
    out = []
    for text in FileSource(path, path.name).lines():
        t = text[1].rstrip("\r\n")
        if t.startswith("{"):
            obj = json.loads(t)
            out.append((obj.get("SYSLOG_IDENTIFIER", ""), obj.get("MESSAGE", "")))
            continue
        m = SYSLOG_3164.match(t) or SYSLOG_BODY.match(t)
        out.append((m.group(1), m.group(2)) if m else ("", t))
    return out


def parsed(path: Path) -> tuple[dict[int, str], list[dict]]:
    source = FileSource(path, path.name)
    lines = list(source.lines())
    parser = get_parser("maillog")
    ledger = parse_guarded(parser, lines, ParseContext(), where=str(path))
    fit_ledger(ledger, parser.tables)
    rows = []
    for line_no, _ in lines:
        items = [i for i in ledger.items.get(line_no, []) if i.get("table") == "maillog"]
        rows.append(items[0] if items else {"line_no": line_no, "kind": None})
    return ledger.status, rows


@pytest.fixture(scope="module", params=LOGS, ids=IDS)
def variant(request):
    path = request.param
    status, rows = parsed(path)
    return path, status, rows, raw_lines(path)


def test_detected_as_maillog(variant):
    path = variant[0]
    assert detect(FileSource(path, path.name)).format == "maillog"


def test_every_line_parsed(variant):
    path, status, rows, raw = variant
    assert len(rows) == len(raw)
    bad = [(n, s) for n, s in status.items() if s != "parsed"]
    assert not bad, f"{path.parent.name}: {len(bad)} lines not parsed, first {bad[:3]}"


def test_known_programs_rarely_other(variant):
    path, _, rows, raw = variant
    known = [(r, m) for r, (prog, m) in zip(rows, raw, strict=True) if KNOWN_PROGRAM.match(prog)]
    assert known, "no line of a known program"
    other = [m for r, m in known if r.get("kind") == "other"]
    assert len(other) <= 0.001 * len(known), f"{len(other)} of {len(known)} filed other, e.g. {other[:3]}"


def test_queue_ids_parsed(variant):
    path, _, rows, raw = variant
    missed = []
    for r, (prog, msg) in zip(rows, raw, strict=True):
        m = QUEUE_ID.match(msg)
        if m and (prog.startswith("postfix") or prog == "opendkim") and r.get("queue_id") != m.group(1):
            missed.append((r.get("queue_id"), msg[:100]))
    assert not missed, f"{len(missed)} queue ids missed, e.g. {missed[:3]}"


def pflogsumm_saved(variant_name: str) -> dict[str, int]:
    text = (FIXTURES / "oracles" / variant_name / "pflogsumm.txt").read_text()
    grand = text.split("Grand Totals", 1)[1].split("\n\n\n", 1)[0]
    return {k: int(re.search(rf"^\s*(\d+)\s+{k}\b", grand, re.M).group(1)) for k in TOTALS}


# the Postfix logs with a pflogsumm oracle (not a Dovecot log kept beside one, as in lmtp-dovecot)
POSTFIX_LOGS = [
    p
    for p in LOGS
    if p.name != "dovecot.log.gz" and (FIXTURES / "oracles" / p.parent.name / "pflogsumm.txt").exists()
]


@pytest.mark.parametrize("path", POSTFIX_LOGS, ids=[p.parent.name for p in POSTFIX_LOGS])
def test_totals_equal_pflogsumm(path):
    """The ingest's counting (what the parser says each line counts as) over the parsed lines."""
    _, rows = parsed(path)
    counted = Counter(r.get("counts_as") for r in rows)
    # as the runs mart counts: deferred is messages (distinct queue ids), the rest lines
    deferred = len({r.get("queue_id") for r in rows if r.get("counts_as") == "deferred"})
    got = {
        "received": counted["received"],
        "delivered": counted["delivered"],
        "deferred": deferred,
        "bounced": counted["bounced"],
        "rejected": counted["rejected"],
    }
    assert got == pflogsumm_saved(path.parent.name)


DELIVERY_STATUS = re.compile(r"^to=<[^>]*>, .*?\bstatus=([A-Za-z-]+)")


def test_delivery_status_read_whole(variant):
    """`status=undeliverable-but-not-cached` (verify probes) and every other status word."""
    path, _, rows, raw = variant
    wrong = []
    for r, (prog, msg) in zip(rows, raw, strict=True):
        body = QUEUE_ID.sub("", msg, count=1)
        m = DELIVERY_STATUS.match(body)
        if m and prog.startswith("postfix") and r.get("status") != m.group(1):
            wrong.append((r.get("status"), m.group(1)))
    assert not wrong, f"{len(wrong)} delivery statuses misread, e.g. {wrong[:3]}"


STAMP_3164 = re.compile(r"^([A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) ")
STAMP_ISO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)) ")


def raw_stamp(text: str) -> datetime | None:
    """The line's time in UTC, read here with the standard library (no year in RFC 3164: this year)."""
    if text.startswith("{"):
        obj = json.loads(text)
        us = int(obj.get("_SOURCE_REALTIME_TIMESTAMP") or obj["__REALTIME_TIMESTAMP"])
        return datetime(1970, 1, 1) + timedelta(microseconds=us)
    if m := STAMP_ISO.match(text):
        return datetime.fromisoformat(m.group(1)).astimezone(UTC).replace(tzinfo=None)
    if m := STAMP_3164.match(text):
        return datetime.strptime(f"{datetime.now(UTC).year} {m.group(1)}", "%Y %b %d %H:%M:%S")
    return None


def test_timestamps_read(variant):
    path = variant[0]
    texts = [t.rstrip("\r\n") for _, t in FileSource(path, path.name).lines()]
    wrong = []
    for r, text in zip(variant[2], texts, strict=True):
        want = raw_stamp(text)
        got = r.get("ts")
        if want is None or got is None or datetime.fromisoformat(str(got)) != want:
            wrong.append((got, want, text[:60]))
    assert not wrong, f"{len(wrong)} stamps misread, e.g. {wrong[:3]}"


POP3_LOGOUT = re.compile(
    r"^pop3(?:\(([^)]*)\)\S*)?: Disconnected: Logged out top=(\d+)/(\d+), retr=(\d+)/(\d+)"
)
# `Login:` up to Dovecot 2.3, `Logged in:` from 2.4
LOGIN = re.compile(r"^(pop3|imap)-login: (?:Login|Logged in): user=<([^>]*)>")


def test_dovecot_fields(variant):
    """POP3 logouts with or without the `(user)<pid><session>` prefix, and logins."""
    path, _, rows, raw = variant
    seen, wrong = 0, []
    for r, (prog, msg) in zip(rows, raw, strict=True):
        if prog != "dovecot":
            continue
        if m := POP3_LOGOUT.match(msg):
            seen += 1
            want = ("mailbox_logout", m.group(1), *(int(g) for g in m.groups()[1:]))
            got = (r.get("kind"), r.get("mailbox_user"), r.get("top_msgs"), r.get("top_bytes"))
            got += (r.get("retr_msgs"), r.get("retr_bytes"))
            if got != want:
                wrong.append((got, want))
        elif m := LOGIN.match(msg):
            seen += 1
            want = ("mailbox_login", m.group(1), m.group(2))
            got = (r.get("kind"), r.get("service"), r.get("mailbox_user"))
            if got != want:
                wrong.append((got, want))
    if path.name == "dovecot.log.gz":
        assert seen, "no POP3 logout or login line"
    assert not wrong, f"{len(wrong)} Dovecot lines misread, e.g. {wrong[:3]}"


@pytest.fixture(scope="module")
def variants_db(tmp_path_factory) -> Path:
    """The variants ingested and built as runs (`mtabench ingest` + `build`)."""
    from mtabench.cli.main import main

    db = tmp_path_factory.mktemp("variants") / "t.duckdb"
    assert main(["ingest", str(SAMPLES / "variants"), "--db", str(db)]) == 0
    assert main(["build", "--db", str(db)]) == 0
    return db


@pytest.mark.parametrize("path", POSTFIX_LOGS, ids=[p.parent.name for p in POSTFIX_LOGS])
def test_runs_mart_equals_pflogsumm(path, variants_db):
    with duckdb.connect(str(variants_db), read_only=True) as con:
        sql = f"select {', '.join(TOTALS)} from runs where run_id = ?"
        row = con.execute(sql, [path.parent.name]).fetchone()
    assert dict(zip(TOTALS, row, strict=True)) == pflogsumm_saved(path.parent.name)


def test_journal_json_stamps_are_the_ones_journalctl_shows():
    """The json export's entries, read by the parser, fall in the second that
    `journalctl -o short-iso` printed for the same entries (the same run, exported twice)."""
    js = SAMPLES / "variants/journald-json/maillog.json.gz"
    iso = SAMPLES / "variants/journald-short-iso/maillog.gz"
    _, rows = parsed(js)
    shown = [t.split(" ", 1)[0] for _, t in FileSource(iso, iso.name).lines()]
    assert len(rows) == len(shown)
    for r, stamp in zip(rows, shown, strict=True):
        want = datetime.fromisoformat(stamp).astimezone(UTC).replace(tzinfo=None)
        assert datetime.fromisoformat(str(r["ts"])).replace(microsecond=0) == want, (r["ts"], stamp)


DOVECOT_24 = FIXTURES / "recorded" / "dovecot-24-default"
# what each count is, as Dovecot 2.4's raw lines say it
DOVECOT_24_RAW = {
    "mailbox_login": re.compile(r"^(?:pop3|imap)-login: Logged in: user=<"),
    "mailbox_auth_failed": re.compile(r"^(?:pop3|imap)-login: Login aborted: .*\(auth failed, "),
    "pop3_session": re.compile(r"^pop3\([^)]+\)<\d+><[^>]+>: Disconnected: Logged out top=\d+/\d+, retr="),
    "imap_session": re.compile(r"^imap\([^)]+\)<\d+><[^>]+>: Disconnected: Logged out in=\d+ out=\d+ "),
    "lmtp_saved": re.compile(r"^lmtp\([^)]+\)<\d+><[^>]+>: msgid=<[^>]*>: saved mail to INBOX$"),
}
DOVECOT_24_PARSED = {
    "mailbox_login": lambda r: r.get("kind") == "mailbox_login",
    "mailbox_auth_failed": lambda r: r.get("kind") == "mailbox_auth_failed",
    "pop3_session": lambda r: r.get("kind") == "mailbox_logout" and r.get("service") == "pop3",
    "imap_session": lambda r: r.get("kind") == "mailbox_logout" and r.get("service") == "imap",
    "lmtp_saved": lambda r: r.get("kind") == "local_delivery" and r.get("mailbox_user") is not None,
}


def test_dovecot_24_counts_per_minute_match_the_raw_lines_and_the_client():
    path = DOVECOT_24 / "dovecot.log.gz"
    _, rows = parsed(path)
    texts = [t.rstrip("\r\n") for _, t in FileSource(path, path.name).lines()]
    want, got = Counter(), Counter()
    for r, text, (prog, msg) in zip(rows, texts, raw_lines(path), strict=True):
        minute = text[11:16]  # RFC 3339 stamp in UTC
        for key, pattern in DOVECOT_24_RAW.items():
            want[key, minute] += prog == "dovecot" and bool(pattern.search(msg))
            got[key, str(r.get("ts"))[11:16]] += DOVECOT_24_PARSED[key](r)
    assert +got == +want
    assert sum(want[k] for k in want if k[0] == "lmtp_saved") > 500
    # the client's own record: a round with ok=1 is one logged-in session of its protocol, ok=0
    # a refused login; the messages it counted are the ones the sessions retrieved
    client = list(csv.DictReader((FIXTURES / "oracles" / DOVECOT_24.name / "mailbox_client.csv").open()))
    sessions = Counter(c["protocol"] for c in client if c["ok"] == "1")
    assert sessions["pop3"] == sum(got[k] for k in got if k[0] == "pop3_session")
    assert sessions["imap"] == sum(got[k] for k in got if k[0] == "imap_session")
    assert sum(c["ok"] == "0" for c in client) == sum(got[k] for k in got if k[0] == "mailbox_auth_failed")
    logins = [r for r in rows if r.get("kind") == "mailbox_login"]
    assert len(logins) == sessions.total()
    assert sum(r.get("retr_msgs") or 0 for r in rows if r.get("kind") == "mailbox_logout") == sum(
        int(c["messages"]) for c in client
    )


def pflogsumm_section(variant_name: str, title: str) -> str:
    """One section of the saved pflogsumm report: the lines after its underlined title up to
    the next blank line (`Warnings: none` when it has nothing)."""
    text = (FIXTURES / "oracles" / variant_name / "pflogsumm.txt").read_text()
    m = re.search(rf"^{re.escape(title)}\n-+\n(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


@pytest.mark.parametrize("path", POSTFIX_LOGS, ids=[p.parent.name for p in POSTFIX_LOGS])
def test_warnings_per_daemon_equal_pflogsumm(path):
    """pflogsumm's Warnings section (`smtpd (total: 474)`): a daemon's `warning:` lines."""
    want = {
        m.group(1): int(m.group(2))
        for m in re.finditer(
            r"^  (\S+) \(total: (\d+)\)$", pflogsumm_section(path.parent.name, "Warnings"), re.M
        )
    }
    _, rows = parsed(path)
    got = Counter(
        r["program"].rsplit("/", 1)[-1]
        for r in rows
        if r.get("kind") == "warning" and str(r.get("program", "")).startswith("postfix")
    )
    assert dict(got) == want


@pytest.mark.parametrize("path", POSTFIX_LOGS, ids=[p.parent.name for p in POSTFIX_LOGS])
def test_master_messages_equal_pflogsumm(path):
    """pflogsumm's Master daemon messages (`reload -- version ...`, `daemon started -- ...`)."""
    want = sum(
        int(m.group(1))
        for m in re.finditer(
            r"^\s+(\d+)\s+\S", pflogsumm_section(path.parent.name, "Master daemon messages"), re.M
        )
    )
    _, rows = parsed(path)
    assert sum(r.get("kind") == "master" for r in rows) == want


def variant_log(name: str, log: str) -> Path:
    return SAMPLES / "variants" / name / log


# --- saturation: process and anvil limits, misbehaving clients --------------------------

LIMIT_WARNING = re.compile(
    r"^warning: (Connection rate limit exceeded|Message delivery request rate limit exceeded"
    r"|Connection concurrency limit exceeded): (\d+) from [^\[\s]*\[([^\]]+)\] for service (\w+)$"
)
SESSION_END = re.compile(r"^(lost connection|timeout|too many errors) after (\S+) from [^\[\s]*\[([^\]]+)\]")
ANVIL_STAT = re.compile(
    r"^statistics: (max (?:connection rate|connection count|message rate|cache size)) (\S+)"
)


def test_stress_limits_and_slips_read():
    path = variant_log("stress", "maillog.gz")
    _, rows = parsed(path)
    seen, wrong = Counter(), []
    for r, (prog, msg) in zip(rows, raw_lines(path), strict=True):
        if m := LIMIT_WARNING.match(msg):
            seen[m.group(1)] += 1
            got = (r.get("kind"), r.get("client_ip"))
            if got != ("warning", m.group(3)):
                wrong.append((got, msg))
        elif m := SESSION_END.match(msg):
            seen[m.group(1)] += 1
            kind = {"lost connection": "lost_connection", "timeout": "timeout"}.get(
                m.group(1), "too_many_errors"
            )
            if r.get("kind") != kind or (kind == "too_many_errors" and r.get("client_ip") != m.group(3)):
                wrong.append((r.get("kind"), msg))
        elif prog == "postfix/anvil" and (m := ANVIL_STAT.match(msg)):
            seen["anvil"] += 1
            if (r.get("kind"), r.get("stat_name"), r.get("stat_value")) != ("anvil", m.group(1), m.group(2)):
                wrong.append((r.get("kind"), msg))
        elif msg.startswith("improper command pipelining after "):
            seen["pipelining"] += 1
            if r.get("kind") != "pipelining":
                wrong.append((r.get("kind"), msg))
    # the recording hit each limit and each slip (scripts/record/postfix_variants.sh v_stress)
    assert set(seen) >= {
        "Connection rate limit exceeded",
        "Message delivery request rate limit exceeded",
        "lost connection",
        "timeout",
        "too many errors",
        "anvil",
        "pipelining",
    }, seen
    assert not wrong, f"{len(wrong)} lines misread, e.g. {wrong[:3]}"


# --- queue administration: postsuper, reload, stop and start ----------------------------

POSTSUPER_SUMMARY = re.compile(r"^(Placed on hold|Released from hold|Requeued|Deleted): (\d+) messages?$")
ORIG_ID = re.compile(r" orig_id=([0-9A-F]+)$")
RECEIVED_ID = re.compile(r"^([0-9A-F]+): client=")


def test_queue_administration_read():
    path = variant_log("admin", "maillog.gz")
    _, rows = parsed(path)
    summaries, requeued, wrong = {}, [], []
    received = {
        m.group(1)
        for prog, msg in raw_lines(path)
        if prog == "postfix/smtpd" and (m := RECEIVED_ID.match(msg))
    }
    for r, (prog, msg) in zip(rows, raw_lines(path), strict=True):
        want = None
        if prog == "postfix/postsuper" and (m := POSTSUPER_SUMMARY.match(msg)):
            summaries[m.group(1)] = int(m.group(2))
            want = "postsuper"
        elif prog == "postfix/postsuper" and (m := QUEUE_ID.match(msg)):
            want = "removed" if msg.endswith(": removed") else None
            if r.get("queue_id") != m.group(1):
                wrong.append((r.get("queue_id"), msg))
        elif prog == "postfix/pickup" and (m := ORIG_ID.search(msg)):
            requeued.append(m.group(1))
            if r.get("related_queue_id") != m.group(1):
                wrong.append((r.get("related_queue_id"), msg))
        elif prog == "postfix/master":
            want = "master"
        elif prog == "postfix/postfix-script":
            want = "script"
        if want and r.get("kind") != want:
            wrong.append((r.get("kind"), msg))
    assert set(summaries) == {"Placed on hold", "Released from hold", "Requeued", "Deleted"}, summaries
    assert summaries["Deleted"] == 1 and summaries["Placed on hold"] == summaries["Released from hold"]
    # every requeued message names the queue id it was received under, once
    assert len(requeued) == summaries["Requeued"] and len(set(requeued)) == len(requeued)
    assert set(requeued) <= received
    assert not wrong, f"{len(wrong)} lines misread, e.g. {wrong[:3]}"


# --- LMTP into Dovecot, Dovecot's mail_log plugin ------------------------------------------

LMTP_SENT = re.compile(
    r"^[0-9A-F]+: to=<([^>]+)>, relay=[^\[\s]*\[(private/dovecot-lmtp)\], .*status=sent "
    r"\(250 2\.0\.0 <([^>]+)> (\S+) Saved\)$"
)
LMTP_SAVED = re.compile(r"^lmtp\(([^)]+)\)<\d+><([^>]+)>: msgid=<([^>]*)>: saved mail to INBOX$")
LMTP_CONN = re.compile(r"^lmtp\((\d+)\): (?:Connect|Disconnect) from ")


def test_lmtp_deliveries_meet_dovecot_saves():
    """Each `postfix/lmtp ... status=sent (250 2.0.0 <u> SESSION Saved)` has Dovecot's `lmtp(u)<pid>
    <SESSION>: msgid=<..>: saved mail to INBOX`; their number is pflogsumm's delivered."""
    mlog, dlog = variant_log("lmtp-dovecot", "maillog.gz"), variant_log("lmtp-dovecot", "dovecot.log.gz")
    _, mrows = parsed(mlog)
    sent, wrong = Counter(), []
    for r, (prog, msg) in zip(mrows, raw_lines(mlog), strict=True):
        if prog == "postfix/lmtp" and (m := LMTP_SENT.match(msg)):
            sent[(m.group(3), m.group(4))] += 1
            got = (
                r.get("status"),
                r.get("relay_host"),
                r.get("relay_ip"),
                r.get("recipient"),
                r.get("counts_as"),
            )
            if got != ("sent", m.group(2), None, m.group(1), "delivered"):
                wrong.append((got, msg))
    _, drows = parsed(dlog)
    saved, conns = Counter(), 0
    for r, (_, msg) in zip(drows, raw_lines(dlog), strict=True):
        if m := LMTP_SAVED.match(msg):
            saved[(m.group(1), m.group(2))] += 1
            got = (r.get("kind"), r.get("mailbox_user"), r.get("message_id"))
            if got != ("local_delivery", m.group(1), m.group(3)):
                wrong.append((got, msg))
        elif LMTP_CONN.match(msg):
            conns += 1
            if r.get("kind") not in ("connect", "disconnect") or r.get("mailbox_user") is not None:
                wrong.append((r.get("kind"), r.get("mailbox_user"), msg))
    assert sent and sent == saved
    assert sum(sent.values()) == pflogsumm_saved("lmtp-dovecot")["delivered"]
    assert conns
    assert not wrong, f"{len(wrong)} lines misread, e.g. {wrong[:3]}"


MAIL_LOG = re.compile(
    r"^(pop3|imap)\(([^)]+)\)<\d+><([^>]+)>: (delete|undelete|expunge|autoexpunge|save|flag_change|copy) ?"
    r"(?:from [^:]*)?: (.*)$"
)
SESSION_LOGOUT = re.compile(
    r"^(pop3|imap)\([^)]+\)<\d+><([^>]+)>: Disconnected: Logged out .*?\b(?:del|expunged)=(\d+)"
)


def test_mail_log_events_read():
    """Dovecot's mail_log plugin lines (`expunge: box=INBOX, uid=19, msgid=<..>, size=2331`): the
    event, user, session, Message-ID and size; and a session's expunge lines are as many as its
    logout line's `del=N` (POP3) or `expunged=N` (IMAP)."""
    path = variant_log("lmtp-dovecot", "dovecot.log.gz")
    _, rows = parsed(path)
    expunged, said, wrong = Counter(), {}, []
    for r, (_, msg) in zip(rows, raw_lines(path), strict=True):
        if m := MAIL_LOG.match(msg):
            svc, user, session, event, fields = m.groups()
            msgid = re.search(r"\bmsgid=<([^>]*)>", fields)
            size = re.search(r"\bsize=(\d+)", fields)
            want = (
                "mail_log",
                svc,
                user,
                session,
                event,
                msgid and msgid.group(1),
                size and int(size.group(1)),
            )
            got = tuple(
                r.get(k)
                for k in ("kind", "service", "mailbox_user", "session_id", "detail", "message_id", "size")
            )
            if got != want:
                wrong.append((got, want))
        elif m := SESSION_LOGOUT.match(msg):
            said[m.group(2)] = int(m.group(3))
        if r.get("kind") == "mail_log" and r.get("detail") == "expunge":
            expunged[r.get("session_id")] += 1
    assert said and not wrong, f"{len(wrong)} mail_log lines misread, e.g. {wrong[:3]}"
    assert {s: n for s, n in said.items() if n} == dict(expunged)


AUTH_VERBOSE = re.compile(r"^auth: passwd-file\(([^,()]+),([^,()]+),<[^>]*>\): (.+)$")


def test_auth_verbose_lines_read():
    """`auth_verbose = yes`: `auth: passwd-file(user,ip,<session>): Password mismatch` names the
    user and the client; as many as the client's wrong-password logins (every tenth round)."""
    path = variant_log("lmtp-dovecot", "dovecot.log.gz")
    _, rows = parsed(path)
    seen, wrong = 0, []
    for r, (_, msg) in zip(rows, raw_lines(path), strict=True):
        if m := AUTH_VERBOSE.match(msg):
            seen += 1
            got = (r.get("kind"), r.get("mailbox_user"), r.get("client_ip"))
            if got != ("auth", m.group(1), m.group(2)):
                wrong.append((got, msg))
    client = (path.parent / "mailbox_client.csv").read_text().splitlines()[1:]
    assert seen == sum(line.split(",")[3] == "0" for line in client if line.strip())
    assert not wrong, f"{len(wrong)} auth lines misread, e.g. {wrong[:3]}"
