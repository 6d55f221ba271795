# ruff: noqa: E501  (log-line patterns read best unwrapped)
"""Core-field recall of the maillog parser on real Postfix and Dovecot lines.

The corpus (tests/fixtures/corpus, sources and licences in its README.md) holds lines
other projects collected from real servers. For each line the fields a reader of the
line expects are read off it by the regexes below, written from Postfix's and Dovecot's
log formats and independent of the parser's code: queue id, client and relay host / IP /
port, status, SMTP reply code and enhanced status code, message-id, and the Dovecot user
and client IP. `mtabench parse maillog` parses the same file; a field counts as recalled
when the parser's value equals the expected one.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent / "fixtures" / "corpus"
MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]
RECALL_FLOOR = 0.99  # share of expected core fields the parser must return

HEAD = re.compile(
    r"^(?:[A-Z][a-z]{2} [ 0-9]?\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+) \S+ (?P<prog>[^\s\[:]+)(?:\[\d+\])?: (?P<msg>.*)$"
)
QID = re.compile(r"^([0-9A-F]{6,}|[0-9B-DF-HJ-NP-TV-Zb-df-hj-np-tv-z]{8,}): ")
# host[ip](:port)?, the host part possibly empty (postscreen) or `unknown`
HOSTPORT = r"([^\s\[\]]*)\[([0-9A-Fa-f:.]+|IPv6:[^\]\s]+)\](?::(\d+))?"
# smtpd's warnings about a client: SASL failures, non-SMTP commands
SMTPD_WARNING = re.compile(r"^warning: (?:non-SMTP command from )?" + HOSTPORT + r": ")
CLIENT_AT = [
    re.compile(r"(?:^|: )client=" + HOSTPORT),
    re.compile(r"^(?:connect|disconnect) from " + HOSTPORT),
    re.compile(
        r"^(?:[A-Z]+ )*[A-Z]+(?: rank \d+ for| after \S+ from| from)? " + HOSTPORT
    ),  # postscreen verdicts
    re.compile(r"(?:reject|reject_warning|milter-reject|hold|discard): \S+ from " + HOSTPORT),
    re.compile(
        r"^(?:lost connection|timeout|too many errors|improper command pipelining) after \S+(?: \(\d+ bytes\))? from "
        + HOSTPORT
    ),
    re.compile(r"TLS connection established from " + HOSTPORT),
]
RELAY_AT = [
    re.compile(r", relay=([^\s,\[]+)(?:\[([^\]]+)\](?::(\d+))?)?,"),
    re.compile(r"^connect to " + HOSTPORT + ":"),
    re.compile(r"TLS connection established to " + HOSTPORT + ":"),
]
STATUS = re.compile(r"(?:^|, )status=([a-z][a-z-]*)")
# the remote's reply: in a delivery's status text or after a reject's client
REPLY = [
    re.compile(r"status=[a-z-]+ \((?:host \S+ said: )?([245]\d\d)[ -](?:([245]\.\d{1,3}\.\d{1,3}) )?"),
    re.compile(
        r"(?:reject|reject_warning|milter-reject|hold|discard): \S+ from \S+: ([245]\d\d) (?:([245]\.\d{1,3}\.\d{1,3}) )?"
    ),
]
MESSAGE_ID = re.compile(r"^message-id=(?:<([^>]*)>|(.*))$")
DOVECOT_USER = [
    re.compile(r"^(?:pop3|imap)-login: (?:Info: )?[^:]*(?:: [^:]*)*?: user=<([^>]+)>", re.I),
    re.compile(r"^(?:pop3|imap)\(([^)]+)\)", re.I),
]
DOVECOT_RIP = re.compile(r"^(?:pop3|imap)-login: .*?\brip=([^,\s]+)", re.I)


def corpus_lines() -> list[tuple[str, str]]:
    """(source file, line) of every corpus line; the grok-pattern samples (message part
    only) get a syslog head naming their Postfix daemon."""
    out = []
    for f in sorted(CORPUS.glob("*.log")):
        out += [(f.name, ln) for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip()]
    for ln in (CORPUS / "postfix-grok-patterns.tsv").read_text(encoding="utf-8").splitlines():
        _case, daemon, message = ln.split("\t")
        prog = "postfix/postfix-script" if daemon == "script" else f"postfix/{daemon}"
        out.append(("postfix-grok-patterns.tsv", f"Nov 27 10:00:00 corpus {prog}[4242]: {message}"))
    return out


def _put(exp: dict, names: tuple[str, str, str], m: re.Match) -> None:
    host, ip, port = m.group(1), m.group(2), m.group(3)
    if host:
        exp[names[0]] = host
    if ip:
        exp[names[1]] = ip[5:] if ip.lower().startswith("ipv6:") else ip
    if port:
        exp[names[2]] = int(port)


def expected(line: str) -> dict:
    """The core fields a reader of the line expects (absent: no expectation)."""
    h = HEAD.match(line)
    if not h:
        return {}
    prog, msg = h["prog"], h["msg"]
    exp: dict = {}
    if prog.startswith("postfix"):
        if q := QID.match(msg):
            exp["queue_id"] = q.group(1)
            msg = msg[q.end() :]
        elif msg.startswith("NOQUEUE: "):
            msg = msg[9:]
        warned = [SMTPD_WARNING] if prog.endswith("/smtpd") else []
        for rx in [*CLIENT_AT, *warned]:
            if m := rx.search(msg):
                _put(exp, ("client_host", "client_ip", "client_port"), m)
                break
        for rx in RELAY_AT:
            if m := rx.search(msg):
                _put(exp, ("relay_host", "relay_ip", "relay_port"), m)
                break
        if m := STATUS.search(msg):
            exp["status"] = m.group(1)
        for rx in REPLY:
            if m := rx.search(msg):
                exp["smtp_code"] = int(m.group(1))
                if m.group(2):
                    exp["enhanced_code"] = m.group(2)
                break
        if m := MESSAGE_ID.match(msg):
            exp["message_id"] = m.group(1) if m.group(1) is not None else m.group(2)
    elif prog == "dovecot":
        for rx in DOVECOT_USER:
            if m := rx.match(msg):
                exp["mailbox_user"] = m.group(1)
                break
        if m := DOVECOT_RIP.match(msg):
            exp["client_ip"] = m.group(1)
    return exp


def parsed(lines: list[str], tmp_path: Path) -> list[dict]:
    """`mtabench parse maillog` over the lines: one field dict per line ({} when the line
    landed as noise or quarantine)."""
    src = tmp_path / "corpus.log"
    src.write_text("".join(ln + "\n" for ln in lines), encoding="utf-8")
    out = subprocess.run(
        [*MTABENCH, "parse", "maillog", str(src)], capture_output=True, text=True, check=True
    )
    rows = [json.loads(x) for x in out.stdout.splitlines()]
    assert [r["line_no"] for r in rows] == list(range(1, len(lines) + 1))
    return [next((i for i in r["items"] if i.get("table") == "maillog"), {}) for r in rows]


def recall(tmp_path: Path) -> tuple[int, int, list[str], list[tuple[str, str, dict]]]:
    lines = corpus_lines()
    got = parsed([ln for _, ln in lines], tmp_path)
    want = total = 0
    misses = []
    for (src, ln), row in zip(lines, got, strict=True):
        exp = expected(ln)
        total += len(exp)
        for k, v in exp.items():
            if row.get(k) == v:
                want += 1
            else:
                misses.append(f"{src}: {k}: expected {v!r}, parsed {row.get(k)!r}: {ln}")
    return want, total, misses, [(s, ln, r) for (s, ln), r in zip(lines, got, strict=True)]


def test_corpus_is_large_and_varied():
    """>= 140 distinct Postfix message shapes (the message with its variable parts masked)
    plus Dovecot POP3 and IMAP lines."""
    shapes = set()
    dovecot = {"pop3": 0, "imap": 0}
    for _src, ln in corpus_lines():
        h = HEAD.match(ln)
        if not h:
            continue
        if h["prog"].startswith("postfix"):
            msg = QID.sub("QID: ", h["msg"])
            shapes.add((h["prog"].rsplit("/", 1)[-1], re.sub(r"[<\[(].*", "", re.sub(r"\d+", "N", msg))[:40]))
        elif h["prog"] == "dovecot":
            for svc in dovecot:
                dovecot[svc] += h["msg"].lower().startswith(svc)
    assert len(shapes) >= 140, len(shapes)
    assert dovecot["pop3"] >= 10 and dovecot["imap"] >= 10, dovecot


def test_core_field_recall(tmp_path, capsys):
    want, total, misses, _ = recall(tmp_path)
    share = want / total
    with capsys.disabled():
        print(f"\ncore-field recall on the real-lines corpus: {want}/{total} = {share:.1%}")
    assert total > 600  # the expectations cover the corpus, not a handful of lines
    assert share >= RECALL_FLOOR, "\n".join(misses[:40])


def test_every_postfix_line_with_a_queue_id_yields_it(tmp_path):
    _, _, _, rows = recall(tmp_path)
    missing = [
        ln
        for _src, ln, r in rows
        if "queue_id" in expected(ln) and r.get("queue_id") != expected(ln)["queue_id"]
    ]
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize(
    "needle, kind",
    [
        ("dovecot: pop3: Disconnected: Logged out", "mailbox_logout"),
        ("dovecot: POP3(root): Disconnected: Logged out", "mailbox_logout"),
        ("dovecot: pop3-login: Info: Login:", "mailbox_login"),
    ],
)
def test_dovecot_session_ends_are_mailbox_kinds(tmp_path, needle, kind):
    lines = [ln for _src, ln in corpus_lines() if needle in ln]
    assert lines, needle
    for row in parsed(lines, tmp_path):
        assert row.get("kind") == kind, (needle, row)
