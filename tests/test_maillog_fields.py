# ruff: noqa: E501  (log lines and their expected fields read best unwrapped)
"""The typed fields of the maillog parser: client/relay host, IP and port, replies, TLS,
postscreen / dnsblog / anvil, Dovecot POP3/IMAP sessions.

Lines are written from the documented formats (Postfix's postscreen(8), dnsblog(8),
anvil(8), smtpd/smtp TLS logging, delivery `status=... (reply)`; Dovecot 2.3's
pop3_logout_format, recorded on this project's machine); each expected value is read off
the line by hand. On the real samples, counts of fields come from grep over the raw text.
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import pytest
from conftest import SAMPLES, land_file

from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import MaillogParser

CASES = [
    (
        "Nov 21 22:04:34 mx postfix/smtpd[1]: connect from unknown[61.238.241.86]:4567",
        {"kind": "connect", "client_host": "unknown", "client_ip": "61.238.241.86", "client_port": 4567},
    ),
    (
        "Nov 21 22:04:34 mx postfix/smtp[2]: 3F1A2B4C5D: to=<a@b.c>, relay=mx.b.c[1.2.3.4]:25, delay=1.2, delays=0.1/0/0.5/0.6, dsn=2.0.0, status=sent (250 2.0.0 Ok: queued as 9A8B7C)",
        {
            "kind": "delivery",
            "relay_host": "mx.b.c",
            "relay_ip": "1.2.3.4",
            "relay_port": 25,
            "smtp_code": 250,
            "enhanced_code": "2.0.0",
            "reply_text": "Ok: queued as 9A8B7C",
        },
    ),
    (
        "Nov 21 22:04:34 mx postfix/smtp[2]: 3F1A2B4C5D: to=<a@b.c>, relay=mx6.b.c[2001:db8::25]:25, delay=1.2, delays=0.1/0/0.5/0.6, dsn=5.1.1, status=bounced (host mx6.b.c[2001:db8::25] said: 550 5.1.1 <a@b.c>: Recipient address rejected: User unknown (in reply to RCPT TO command))",
        {
            "kind": "delivery",
            "relay_host": "mx6.b.c",
            "relay_ip": "2001:db8::25",
            "relay_port": 25,
            "smtp_code": 550,
            "enhanced_code": "5.1.1",
            "reply_text": "<a@b.c>: Recipient address rejected: User unknown",
        },
    ),
    (
        "Nov 21 22:04:34 mx postfix/local[3]: 3F1A2B4C5E: to=<u@x>, relay=local, delay=0.01, delays=0/0/0/0, dsn=2.0.0, status=sent (delivered to mailbox)",
        {"kind": "delivery", "relay_host": "local", "relay_ip": None, "relay_port": None, "smtp_code": None},
    ),
    (
        "Nov 21 22:04:34 mx postfix/lmtp[3]: 3F1A2B4C5E: to=<u@x>, relay=private/dovecot-lmtp, delay=0.01, dsn=2.0.0, status=sent (250 2.0.0 <u@x> Saved)",
        {
            "kind": "delivery",
            "relay_host": "private/dovecot-lmtp",
            "smtp_code": 250,
            "enhanced_code": "2.0.0",
            "reply_text": "<u@x> Saved",
        },
    ),
    (
        "Nov 21 22:04:34 mx postfix/smtp[3]: 3F1A2B4C5F: to=<u@x>, relay=none, delay=30, delays=0/0/30/0, dsn=4.4.1, status=deferred (connect to mx.x[5.6.7.8]:25: Connection timed out)",
        {"kind": "delivery", "relay_host": "none", "relay_ip": None, "smtp_code": None, "status": "deferred"},
    ),
    (
        "Nov 21 22:04:34 mx postfix/smtpd[1]: Anonymous TLS connection established from unknown[61.238.241.86]:4567: TLSv1.3 with cipher TLS_AES_256_GCM_SHA384 (256/256 bits)",
        {
            "client_host": "unknown",
            "client_ip": "61.238.241.86",
            "client_port": 4567,
            "tls_level": "Anonymous",
            "tls_protocol": "TLSv1.3",
            "tls_cipher": "TLS_AES_256_GCM_SHA384",
            "tls_bits": 256,
        },
    ),
    (
        "Nov 21 22:04:34 mx postfix/smtp[1]: Verified TLS connection established to mx.b.c[1.2.3.4]:25: TLSv1.2 with cipher ECDHE-RSA-AES256-GCM-SHA384 (256/256 bits)",
        {
            "relay_host": "mx.b.c",
            "relay_ip": "1.2.3.4",
            "relay_port": 25,
            "tls_level": "Verified",
            "tls_protocol": "TLSv1.2",
            "tls_cipher": "ECDHE-RSA-AES256-GCM-SHA384",
            "tls_bits": 256,
        },
    ),
    (
        "Nov 21 22:04:34 mx postfix/postscreen[9]: CONNECT from [1.2.3.4]:5678 to [10.0.0.1]:25",
        {"kind": "postscreen", "verdict": "CONNECT", "client_ip": "1.2.3.4", "client_port": 5678},
    ),
    (
        "Nov 21 22:04:34 mx postfix/postscreen[9]: PASS NEW [1.2.3.4]:5678",
        {"kind": "postscreen", "verdict": "PASS NEW", "client_ip": "1.2.3.4", "client_port": 5678},
    ),
    (
        "Nov 21 22:04:34 mx postfix/postscreen[9]: DNSBL rank 3 for [1.2.3.4]:5678",
        {"kind": "postscreen", "verdict": "DNSBL", "dnsbl_rank": 3, "client_ip": "1.2.3.4"},
    ),
    (
        "Nov 21 22:04:34 mx postfix/postscreen[9]: PREGREET 11 after 0.1 from [1.2.3.4]:5678: EHLO x\\\\r\\\\n",
        {"kind": "postscreen", "verdict": "PREGREET", "client_ip": "1.2.3.4", "client_port": 5678},
    ),
    (
        "Nov 21 22:04:34 mx postfix/postscreen[9]: HANGUP after 0.5 from [1.2.3.4]:5678 in tests after SMTP handshake",
        {"kind": "postscreen", "verdict": "HANGUP", "client_ip": "1.2.3.4"},
    ),
    (
        "Nov 21 22:04:34 mx postfix/postscreen[9]: COMMAND PIPELINING from [1.2.3.4]:5678 after EHLO: MAIL FROM:<x@y>\\\\r\\\\n",
        {"kind": "postscreen", "verdict": "COMMAND PIPELINING", "client_ip": "1.2.3.4"},
    ),
    (
        "Nov 21 22:04:34 mx postfix/postscreen[9]: DISCONNECT [1.2.3.4]:5678",
        {"kind": "postscreen", "verdict": "DISCONNECT", "client_ip": "1.2.3.4", "client_port": 5678},
    ),
    (
        "Nov 21 22:04:34 mx postfix/postscreen[9]: NOQUEUE: reject: RCPT from [1.2.3.4]:5678: 550 5.7.1 Service unavailable; client [1.2.3.4] blocked using zen.spamhaus.org; from=<a@b>, to=<c@d>, proto=ESMTP, helo=<x>",
        {
            "kind": "reject",
            "client": "[1.2.3.4]:5678",
            "client_host": None,
            "client_ip": "1.2.3.4",
            "client_port": 5678,
            "smtp_code": 550,
            "enhanced_code": "5.7.1",
            "reason": "Service unavailable",
        },
    ),
    (
        "Nov 21 22:04:34 mx postfix/dnsblog[8]: addr 1.2.3.4 listed by domain zen.spamhaus.org as 127.0.0.2",
        {
            "client_ip": "1.2.3.4",
            "dnsbl_domain": "zen.spamhaus.org",
            "dnsbl_reply": "127.0.0.2",
            "verdict": "listed",
        },
    ),
    (
        "Nov 21 22:04:34 mx postfix/anvil[7]: statistics: max connection rate 1/60s for (smtp:1.2.3.4) at Nov 21 22:00:00",
        {
            "kind": "anvil",
            "stat_name": "max connection rate",
            "stat_value": "1/60s",
            "service": "smtp",
            "client_ip": "1.2.3.4",
        },
    ),
    (
        "Nov 21 22:04:34 mx postfix/anvil[7]: statistics: max cache size 3 at Nov 21 22:00:00",
        {"kind": "anvil", "stat_name": "max cache size", "stat_value": "3", "client_ip": None},
    ),
    (
        "Nov 21 22:04:34 mx postfix/tlsproxy[6]: CONNECT from [1.2.3.4]:5678",
        {"program": "postfix/tlsproxy", "verdict": "CONNECT", "client_ip": "1.2.3.4", "client_port": 5678},
    ),
    (
        "Nov 21 22:04:34 mx postfix/smtpd[1]: NOQUEUE: reject: RCPT from unknown[61.238.241.86]:4567: 554 5.7.1 <x@y>: Relay access denied; from=<a@b> to=<x@y> proto=ESMTP helo=<h>",
        {
            "kind": "reject",
            "client_host": "unknown",
            "client_ip": "61.238.241.86",
            "client_port": 4567,
            "smtp_code": 554,
            "enhanced_code": "5.7.1",
            "reply_text": "<x@y>: Relay access denied",
        },
    ),
    (
        "2026-11-23T06:23:56.963929+00:00 vm dovecot: pop3(user322@bench.test)<23715><1m+Ao+tgOsp/AAAB>: Disconnected: Logged out top=0/0, retr=5/16511, del=5/44, size=133287",
        {
            "kind": "mailbox_logout",
            "service": "pop3",
            "mailbox_user": "user322@bench.test",
            "session_id": "1m+Ao+tgOsp/AAAB",
            "top_msgs": 0,
            "top_bytes": 0,
            "retr_msgs": 5,
            "retr_bytes": 16511,
            "del_msgs": 5,
            "mbox_msgs": 44,
            "mbox_size": 133287,
        },
    ),
    (
        "2026-11-23T06:23:56.963929+00:00 vm dovecot: pop3-login: Login: user=<user320@bench.test>, method=PLAIN, rip=127.0.0.1, lip=127.0.0.1, mpid=23717, secured, session=<abcDEF>",
        {
            "kind": "mailbox_login",
            "service": "pop3",
            "mailbox_user": "user320@bench.test",
            "client_ip": "127.0.0.1",
            "session_id": "abcDEF",
        },
    ),
    (
        "2026-11-23T06:23:56.963929+00:00 vm dovecot: imap-login: Disconnected (auth failed, 1 attempts in 2 secs): user=<x@y>, method=PLAIN, rip=10.1.1.1, lip=10.0.0.1, session=<qq>",
        {"kind": "mailbox_auth_failed", "service": "imap", "mailbox_user": "x@y", "client_ip": "10.1.1.1"},
    ),
    # Dovecot 2.3's default imap_logout_format: header fetches fill top_*, body fetches retr_*
    (
        "2026-11-23T06:23:56.963929+00:00 vm dovecot: imap(user7@bench.test)<23800><Xy1>: Disconnected: Logged out in=120 out=2455 deleted=0 expunged=2 trashed=0 hdr_count=1 hdr_bytes=310 body_count=3 body_bytes=9021",
        {
            "kind": "mailbox_logout",
            "service": "imap",
            "mailbox_user": "user7@bench.test",
            "session_id": "Xy1",
            "top_msgs": 1,
            "top_bytes": 310,
            "retr_msgs": 3,
            "retr_bytes": 9021,
            "del_msgs": 2,
            "bytes_in": 120,
            "bytes_out": 2455,
        },
    ),
    # Courier pop3d/imapd (courier-imap's logging; lines as quoted in its users' log parsers and
    # list posts, written here, not recorded: see docs/mailbox.md). Courier counts bytes.
    (
        "Apr 15 06:54:50 bovo pop3d: LOGIN, user=april@mailserver.com, ip=[::ffff:192.0.2.7], port=[1060]",
        {
            "kind": "mailbox_login",
            "service": "pop3",
            "mailbox_user": "april@mailserver.com",
            "client_ip": "192.0.2.7",
            "client_port": 1060,
        },
    ),
    (
        "Oct 15 14:51:12 imscp pop3d-ssl: LOGOUT, user=user@domain.tld, ip=[::ffff:192.168.1.2], port=[41254], top=0, retr=496, rcvd=32, sent=672, time=0, stls=1",
        {
            "kind": "mailbox_logout",
            "service": "pop3",
            "mailbox_user": "user@domain.tld",
            "client_ip": "192.168.1.2",
            "client_port": 41254,
            "top_bytes": 0,
            "retr_bytes": 496,
            "retr_msgs": None,
            "bytes_in": 32,
            "bytes_out": 672,
        },
    ),
    (
        "Apr 21 15:14:55 www imapd: LOGOUT, user=user@domain.tld, ip=[2001:db8::9], headers=12, body=3400, rcvd=635, sent=1872, time=4477, starttls=1",
        {
            "kind": "mailbox_logout",
            "service": "imap",
            "client_ip": "2001:db8::9",
            "top_bytes": 12,
            "retr_bytes": 3400,
            "bytes_in": 635,
            "bytes_out": 1872,
        },
    ),
    (
        "Nov 24 12:00:03 mx imapd: LOGIN FAILED, user=bad@bench.test, ip=[::ffff:127.0.0.1]",
        {
            "kind": "mailbox_auth_failed",
            "service": "imap",
            "mailbox_user": "bad@bench.test",
            "client_ip": "127.0.0.1",
        },
    ),
    (
        "Nov 24 12:00:04 mx pop3d: DISCONNECTED, user=user4@bench.test, ip=[::ffff:127.0.0.1], port=[41480], top=0, retr=0, rcvd=12, sent=39, time=60",
        {
            "kind": "mailbox_disconnect",
            "service": "pop3",
            "mailbox_user": "user4@bench.test",
            "retr_bytes": 0,
            "bytes_out": 39,
        },
    ),
    (
        "Nov 24 12:00:01 mx pop3d: Connection, ip=[::ffff:127.0.0.1]",
        {"kind": "mailbox_connect", "service": "pop3", "mailbox_user": None, "client_ip": "127.0.0.1"},
    ),
]


@pytest.mark.parametrize(("line", "want"), CASES, ids=[str(i) for i in range(1, len(CASES) + 1)])
def test_documented_line_fields(line, want):
    ledger = MaillogParser().parse([(1, line + "\n")], ParseContext(year=2026))
    (item,) = ledger.items[1]
    assert {k: item.get(k) for k in want} == want


REAL = sorted(SAMPLES.glob("runs/*/maillog*.gz")) + [
    Path(__file__).parent / "fixtures" / "misc" / "postfix37_maillog_file.log.gz"
]


@pytest.mark.parametrize("path", REAL, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_real_logs_client_and_relay_fields(landing_con, path):
    """Independent route: regexes over the raw text count what the typed columns must hold."""
    land_file(landing_con, MaillogParser(), path, year=2026)
    text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
    q = landing_con.execute
    # delivery lines with `relay=host[ip]:port`, by relay host
    relays: dict[tuple[str, str, int], int] = {}
    for m in re.finditer(
        r"\]: [0-9A-Za-z]+: to=<[^>]*>, (?:orig_to=<[^>]*>, )?relay=([^\[,]+)\[([^\]]+)\]:(\d+),", text
    ):
        key = (m.group(1), m.group(2), int(m.group(3)))
        relays[key] = relays.get(key, 0) + 1
    got = q(
        "select relay_host, relay_ip, relay_port, count(*) from raw.maillog "
        "where kind = 'delivery' and relay_ip is not null group by all"
    ).fetchall()
    assert {(h, i, p): n for h, i, p, n in got} == relays
    # smtpd `connect from host[ip]:port` lines (Postfix >= 3.x logs the port)
    conns: dict[str, int] = {}
    for m in re.finditer(r"postfix/[a-z/-]*smtpd\[\d+\]: connect from [^\[\s]*\[([^\]]+)\]", text):
        conns[m.group(1)] = conns.get(m.group(1), 0) + 1
    got = q("select client_ip, count(*) from raw.maillog where kind = 'connect' group by all").fetchall()
    assert dict(got) == conns
    # delivery replies `status=sent (250 2.0.0 ...)`: code and enhanced code as separate values
    replies: dict[tuple[int, str], int] = {}
    for m in re.finditer(r", status=\w+ \((?:host \S+ said: )?(\d{3}) (\d\.\d+\.\d+) ", text):
        key = (int(m.group(1)), m.group(2))
        replies[key] = replies.get(key, 0) + 1
    got = q(
        "select smtp_code, enhanced_code, count(*) from raw.maillog "
        "where kind = 'delivery' and smtp_code is not null group by all"
    ).fetchall()
    assert {(c, e): n for c, e, n in got} == replies
    # transports without a host (`relay=virtual`, `relay=local`, `relay=none`): the name is the host
    names: dict[str, int] = {}
    for m in re.finditer(r"\]: [0-9A-Za-z]+: to=<[^>]*>, (?:orig_to=<[^>]*>, )?relay=([^\[,]+), ", text):
        names[m.group(1)] = names.get(m.group(1), 0) + 1
    got = q(
        "select relay_host, count(*) from raw.maillog "
        "where kind = 'delivery' and relay_ip is null group by all"
    ).fetchall()
    assert dict(got) == names
    assert conns or relays or names  # every sample holds connections or deliveries
