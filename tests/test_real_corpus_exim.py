# ruff: noqa: E501  (log-line patterns read best unwrapped)
"""Core-field recall of the maillog parser on real Exim, Sendmail, qmail and Courier lines.

The same method as test_real_corpus.py, on the corpus files of the MTAs other than Postfix
(tests/fixtures/corpus, sources and licences in its README.md): fail2ban's Exim, Sendmail,
qmail and Courier samples, and lines of Exim's own test suite (`test/log/*`, the mainlogs
Exim wrote, its harness having masked stamps, ids and some values). For each line the fields
a reader expects are read off it by the regexes below, written from the MTAs' documented log
formats (Exim's specification, chapter "Log files") and independent of the parser's code:
queue id, kind of event, sender, recipient, client and relay host / IP / port, SMTP reply
code and enhanced status code, message-id and size. A value the Exim harness masked
(`S=sss`, `[V4NET.0.0.0]`, `[ip4.ip4.ip4.ip4]`, `:PORT_D`) is not expected.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from test_real_corpus import CORPUS, RECALL_FLOOR, parsed

FILE_FLOOR = 0.95  # share of one source's expected core fields

EXIM_FILES = (
    "exim-testsuite.log",
    "fail2ban-exim.log",
    "fail2ban-exim-spam.log",
    "exim_exporter-mainlog.log",
    "wazuh-exim.log",
    "logstash-exim.log",
)
OTHER_FILES = (
    "fail2ban-sendmail-auth.log",
    "fail2ban-qmail.log",
    "fail2ban-courier-smtp.log",
    "fluent-sendmail.log",
    "mozilla-sendmail.log",
)

STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [-+]\d{4})?"
# Exim's own stamp, through syslog possibly after (or instead of) a syslog head, then the
# `[pid]` of `log_selector = +pid`
EXIM_HEAD = re.compile(rf"^(?:(?:{STAMP} )?\S+ exim4?\[\d+\]: )?(?:{STAMP} )?(?:\[\d+\] )?(?P<msg>.*)$")
EXIM_ID = re.compile(r"^([0-9A-Za-z]{6}-[0-9A-Za-z]{6,11}-[0-9A-Za-z]{2,4}) ")
# <= arrival, => delivery, -> another address of it, *> suppressed by -N, >> cutthrough,
# ** failure, == deferral (the spec's "Log line flags")
FLAG = re.compile(r"^(<=|=>|->|\*>|>>|\*\*|==) (\S+)(?: \(([^)]*)\))?(?: <([^>]*)>)?")
FLAG_EVENT = {
    "<=": ("arrival", None),
    "=>": ("delivery", "sent"),
    "->": ("delivery", "sent"),
    "*>": ("delivery", "sent"),
    ">>": ("delivery", "sent"),
    "**": ("delivery", "bounced"),
    "==": ("delivery", "deferred"),
}
# H=name (helo) [ip]:port, the name or the helo possibly absent
H_FIELD = r"H=(?:([^\s()\[\]=]+) ?)?(?:\([^)]*\) ?)?\[([^\]\s]+)\](?::(\S+?))?(?=[\s:*]|$)"
CLIENT_AT = r"(?:H=)?(?:([^\s()\[\]=]+) )?(?:\([^)]*\) )?\[([^\]\s]+)\](?::(\d+))?"
# session lines naming their client after `from` (or `for`)
CLIENT_FROM = re.compile(
    r"^(?:(?:SMTP connection(?: Ci=\S+)?|no MAIL in SMTP connection|SMTP call|SMTP command timeout on connection"
    r"|SMTP data timeout \(message abandoned\) on connection|TLS error on connection"
    r"|unexpected disconnection while reading SMTP command|ETRN \S+ received|ATRN '[^']*' received"
    r"|rejected MAIL|rejected) from|\S+ authenticator failed for) " + CLIENT_AT
)
DURING = re.compile(r"\(during SMTP connection from " + CLIENT_AT)
# the fields an SMTP session's line starts with, before what happened (`rejected ...`)
SESSION_FIELDS = r"(?:(?:H=(?:[^\s()\[\]=]+ )?(?:\([^)]*\) )?\[[^\]\s]+\](?::\S+)?|[A-Z][A-Za-z]*=(?:<[^>]*>|\S+)|K|PRDR) )*"
REJECT = re.compile(r"^" + SESSION_FIELDS + r"(?:temporarily )?rejected (?!by non-SMTP)")
REJECT_RCPT = re.compile(r"rejected RCPT <?([^\s<>:]*)>?(?::|$)")
SENDER_F = re.compile(r"(?:^| )F=<?([^\s<>]*)>?(?: |$)")
# a remote's reply: C="250 ..." on a delivery, the error text of a deferral or failure
CONFIRM = re.compile(r' C="([245]\d\d)[ -](?:([245]\.\d{1,3}\.\d{1,3}) )?')
REMOTE_ERROR = re.compile(
    r"(?:SMTP error from remote (?:mail server|mailer)|LMTP error) after [^:]*?(?::<[^>]*>[^:]*)?: (?:host (\S+) \[([^\]]+)\]: )?([245]\d\d)[ -](?:([245]\.\d{1,3}\.\d{1,3}) )?"
)
MASKED = re.compile(r"V4NET|V6NET|ip4\.ip4|ip6:ip6|PORT_|^s+$")


def _real(v: str | None) -> bool:
    return bool(v) and not MASKED.search(v)


def _put(exp: dict, prefix: str, host: str | None, ip: str | None, port: str | None) -> None:
    if _real(host) and host != ip:
        exp[prefix + "_host"] = host
    if _real(ip):
        exp[prefix + "_ip"] = ip[5:] if ip.lower().startswith("ipv6:") else ip
    if port and port.isdigit():
        exp[prefix + "_port"] = int(port)


def _address(v: str) -> str:
    return "" if v == "<>" else v.strip("<>")


def expected_exim(line: str) -> dict:
    msg = EXIM_HEAD.match(line)["msg"]
    exp: dict = {}
    if m := EXIM_ID.match(msg):
        exp["queue_id"] = m.group(1)
        msg = msg[m.end() :]
    if msg == "Completed" or msg.startswith("Completed "):
        exp["kind"] = "removed"
        return exp
    if f := FLAG.match(msg):
        flag, first, _parent, orig = f.groups()
        exp["kind"], status = FLAG_EVENT[flag]
        if status:
            exp["status"] = status
        fields = msg[f.end() :]
        if flag == "<=":
            exp["sender"] = _address(first)
            fields = fields.split(' T="', 1)[0]  # the subject may hold anything
            if m := re.search(" " + H_FIELD, fields):
                _put(exp, "client", *m.groups())
            if m := re.search(r" S=(\d+)(?: |$)", fields):
                exp["size"] = int(m.group(1))
            if m := re.search(r" id=<?([^\s<>]+)>?(?: |$)", fields):
                exp["message_id"] = m.group(1)
            return exp
        rcpt = orig if orig and "@" in orig else first.rstrip(":")
        if "@" in rcpt and not rcpt.startswith(">"):
            exp["recipient"] = rcpt
        if m := SENDER_F.search(fields):
            exp["sender"] = _address(m.group(1))
        if m := re.search(" " + H_FIELD, fields):
            _put(exp, "relay", *m.groups())
        if m := CONFIRM.search(fields):
            exp["smtp_code"] = int(m.group(1))
            if m.group(2):
                exp["enhanced_code"] = m.group(2)
        elif m := REMOTE_ERROR.search(fields):
            if "relay_ip" not in exp:
                _put(exp, "relay", m.group(1), m.group(2), None)
            exp["smtp_code"] = int(m.group(3))
            if m.group(4):
                exp["enhanced_code"] = m.group(4)
        return exp
    if REJECT.match(msg):
        exp["kind"] = "reject"
        if m := REJECT_RCPT.search(msg):
            exp["recipient"] = m.group(1)
        if m := SENDER_F.search(msg.split(" rejected ", 1)[0]):
            exp["sender"] = _address(m.group(1))
    # a protocol error quotes the client's command first, which may hold anything
    if m := re.match(r'^SMTP (?:protocol|syntax) error in ".*" (?=H=)', msg):
        msg = msg[m.end() :]
    if "queue_id" in exp and " F=" not in msg and "rejected" not in msg and (m := re.search(H_FIELD, msg)):
        # `<id> H=host [ip]: error`: a host of a delivery attempt (no sender, nothing refused)
        _put(exp, "relay", *m.groups())
    elif (
        (m := re.search(r"(?:^| )" + H_FIELD, msg))
        or (m := CLIENT_FROM.match(msg))
        or (m := DURING.search(msg))
    ):
        _put(exp, "client", *m.groups())
    return exp


SM_QID = re.compile(r"^([0-9A-Za-z]{8,20}): ")
SYSLOG = re.compile(
    r"^[A-Z][a-z]{2} [ 0-9]?\d \d\d:\d\d:\d\d \S+ (?P<prog>[^\s\[:]+)(?:\[\d+\])?: (?P<msg>.*)$"
)


def expected_other(line: str) -> dict:
    h = SYSLOG.match(line)
    prog, msg = h["prog"], h["msg"]
    exp: dict = {}
    if prog in ("sendmail", "sm-mta") or prog.startswith("sm-"):
        if m := SM_QID.match(msg):
            exp["queue_id"] = m.group(1)
            msg = msg[m.end() :]
        hosts = re.findall(r"relay=(?:([^\s,\[]+) )?\[([^\]]+)\]", msg)
        if m := re.match(r"^(?:(\S+) )?\[([^\]]+)\](?: \(may be forged\))?: possible SMTP attack", msg):
            _put(exp, "client", m.group(1), m.group(2), None)
        elif msg.startswith("to="):
            # a delivery: `to=<a>[,<b>...], ..., relay=host [ip], dsn=, [reply=NNN X.Y.Z text,] stat=`
            exp["recipient"] = re.match(r"to=<?([^>,\s]+)", msg).group(1)
            if hosts:
                _put(exp, "relay", *hosts[-1], None)
            if m := re.search(r", stat=(Sent|Deferred)\b", msg):
                exp["status"] = {"Sent": "sent", "Deferred": "deferred"}[m.group(1)]
            if m := re.search(
                r"(?:, reply=|, stat=Deferred: )([245]\d\d)[ -](?:([245]\.\d{1,3}\.\d{1,3}) )?", msg
            ):
                exp["smtp_code"] = int(m.group(1))
                if m.group(2):
                    exp["enhanced_code"] = m.group(2)
        elif hosts:
            # a user name may hold `relay=`: sendmail's own field is the last
            _put(exp, "client", *hosts[-1], None)
            if m := re.match(r"from=<?([^>,\s]*)>?,", msg):
                exp["sender"] = m.group(1)
    elif prog == "qmail" or prog == "rblsmtpd":
        msg = re.sub(r"^\d+\.\d+ ", "", msg)  # splogger's stamp
        if m := re.match(r"^rblsmtpd: (\S+) pid \d+ \S+: ([245]\d\d) ", msg):
            exp.update(kind="reject", client_ip=m.group(1), smtp_code=int(m.group(2)))
        elif m := re.match(r"^qmail-smtpd: ([245]\d\d) .*\bip (\S+)", msg):
            exp.update(kind="reject", client_ip=m.group(2), smtp_code=int(m.group(1)))
        elif m := re.match(r"^(?:rblsmtpd: )?\S+ blocked (\S+) ", msg):
            exp.update(kind="reject", client_ip=m.group(1))
    elif prog.startswith("courier"):
        if m := re.match(r"^error,relay=([^,]+)(?:,port=(\d+))?", msg):
            _put(exp, "client", None, m.group(1), m.group(2))
        if m := re.search(r",from=<([^>]*)>", msg):
            exp["sender"] = m.group(1)
        if m := re.search(r",to=<([^>]*)>: ([245]\d\d) ", msg):
            exp.update(kind="reject", recipient=m.group(1), smtp_code=int(m.group(2)))
        elif m := re.search(r',msg="([245]\d\d) ', msg):
            exp["smtp_code"] = int(m.group(1))
    return exp


def corpus() -> list[tuple[str, str]]:
    out = []
    for name in EXIM_FILES + OTHER_FILES:
        text = (CORPUS / name).read_text(encoding="utf-8")
        out += [(name, ln) for ln in text.splitlines() if ln.strip()]
    return out


def expected(src: str, line: str) -> dict:
    return expected_exim(line) if src in EXIM_FILES else expected_other(line)


def recall(tmp_path: Path) -> tuple[Counter, Counter, list[str]]:
    """(expected, recalled) fields per source file, and the misses. Each file is parsed on its
    own, as a log file of one MTA is."""
    want, got, misses = Counter(), Counter(), []
    for name in EXIM_FILES + OTHER_FILES:
        lines = [ln for src, ln in corpus() if src == name]
        for ln, row in zip(lines, parsed(lines, tmp_path), strict=True):
            for k, v in expected(name, ln).items():
                want[name] += 1
                if row.get(k) == v:
                    got[name] += 1
                else:
                    misses.append(f"{name}: {k}: expected {v!r}, parsed {row.get(k)!r}: {ln[:240]}")
    return want, got, misses


def test_corpus_covers_exims_log_flags_and_fields():
    """The sample holds every delivery flag, rejects, completions, and lines with the
    fields the core fields are read from."""
    lines = [ln for src, ln in corpus() if src in EXIM_FILES]
    flags = Counter(
        f.group(1) for ln in lines if (f := FLAG.match(EXIM_ID.sub("", EXIM_HEAD.match(ln)["msg"])))
    )
    assert set(FLAG_EVENT) <= set(flags), flags
    for needle in (" Completed", " rejected RCPT", " rejected after DATA", ' C="', " id=", " H=", " DT="):
        assert any(needle in ln for ln in lines), needle
    assert len(lines) >= 400


def test_core_field_recall(tmp_path, capsys):
    want, got, misses = recall(tmp_path)
    with capsys.disabled():
        print()
        for name in want:
            print(f"core-field recall, {name}: {got[name]}/{want[name]} = {got[name] / want[name]:.1%}")
    total, share = sum(want.values()), sum(got.values()) / sum(want.values())
    assert total > 1000  # the expectations cover the corpus, not a handful of lines
    # and each source on its own: a small file's misses do not hide in the large ones
    low = {n: f"{got[n]}/{want[n]}" for n in want if got[n] / want[n] < FILE_FLOOR}
    assert not low, low
    assert share >= RECALL_FLOOR, f"{share:.3f}\n" + "\n".join(misses[:60])


def test_every_exim_line_with_a_message_id_yields_it(tmp_path):
    """The queue id (Exim's message id) of every line that names one."""
    lines = [ln for src, ln in corpus() if src in EXIM_FILES]
    missing = [
        ln
        for ln, row in zip(lines, parsed(lines, tmp_path), strict=True)
        if (q := expected_exim(ln).get("queue_id")) and row.get("queue_id") != q
    ]
    assert not missing, "\n".join(missing)
