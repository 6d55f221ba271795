"""Recorded sendmail 8.17 runs (samples/mtas/sendmail-*) read by the project, checked against
`mailstats -p` (cleared before each run, printed right after it:
tests/fixtures/oracles/<run>/mailstats-p.txt) and against the raw maillog and postal output."""

from __future__ import annotations

import gzip
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import found, land_file, sink_record

from ingest.parsers.maillog import MaillogParser

ROOT = Path(__file__).resolve().parents[1]
RUNS = found(sorted((ROOT / "samples" / "mtas").glob("sendmail-*")), "sendmail runs")
ORACLES = ROOT / "tests" / "fixtures" / "oracles"

SM = re.compile(r"^(\S+)T(\d\d:\d\d):\S+ \S+ sendmail\[\d+\]: (?:(\w+): )?(.*)$")


def mailstats(run: Path) -> dict[str, int]:
    """The MTA's `T` (totals) and `C` (connections) lines of `mailstats -p`."""
    text = (ORACLES / run.name / "mailstats-p.txt").read_text()
    mta = text.split("MTA statistics...", 1)[1]
    t = re.search(r"^ T\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)", mta, re.M).groups()
    c = re.search(r"^ C\s+(\d+)\s+(\d+)\s+(\d+)", mta, re.M).groups()
    return {"from": int(t[0]), "to": int(t[2]), "rejected": int(t[4]), "connections": int(c[0])}


def raw_minutes(run: Path) -> dict[str, Counter]:
    """Per minute from the raw lines: messages accepted (a `from=` line with nrcpts > 0 whose
    transfer was not broken off by the client), deliveries sent, `User unknown` RCPT rejects
    and connection-throttle lines. `run`: a folder with maillog.gz."""
    lines = [SM.match(ln) for ln in gzip.decompress((run / "maillog.gz").read_bytes()).decode().splitlines()]
    # a transfer the client broke off (in DATA, or its connection lost after RCPT): the
    # transaction's `from=` line follows, but no message was accepted
    aborted = {
        m[3] for m in lines if m and m[4].startswith(("collect: premature EOM", "lost input channel from "))
    }
    out = {k: Counter() for k in ("received", "delivered", "rejected", "throttled")}
    for m in filter(None, lines):
        minute, qid, text = m[2], m[3], m[4]
        if text.startswith("from=") and not re.search(r", nrcpts=0,", text) and qid not in aborted:
            out["received"][minute] += 1
        elif text.startswith("to=") and ", stat=Sent" in text:
            out["delivered"][minute] += 1
        elif re.fullmatch(r"<[^>]+>\.\.\. User unknown", text):
            out["rejected"][minute] += 1
        elif text.startswith("deferring connections on daemon "):
            out["throttled"][minute] += 1
    return out


@pytest.fixture
def landed(landing_con):
    def land(run: Path):
        land_file(landing_con, MaillogParser(), run / "maillog.gz", year=2026)
        return landing_con

    return land


COUNTED = {
    # the project's counting (int_maillog__lines): received = sendmail `from` lines, delivered =
    # deliveries sent, rejected = kind reject; throttle lines are warnings
    "received": "kind = 'from'",
    "delivered": "kind = 'delivery' and status = 'sent'",
    "rejected": "kind = 'reject'",
    "throttled": "kind = 'warning' and detail like 'deferring connections on daemon %'",
}


def assert_received_and_delivered(con, fid: int, oracle: dict) -> dict:
    """Messages received plus the notices sendmail made (mailstats counts both as `from`), and
    deliveries, against mailstats'; returns the file's counts per COUNTED key and `notices`."""
    n = {
        k: con.execute(f"select count(*) from raw.maillog where file_id = {fid} and {w}").fetchone()[0]
        for k, w in COUNTED.items() | {"notices": "kind = 'bounce_notice'"}.items()
    }
    assert (n["received"] + n["notices"], n["delivered"]) == (oracle["from"], oracle["to"])
    return n


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_totals_match_mailstats(landed, run):
    con = landed(run)
    oracle = mailstats(run)
    n = {
        k: con.execute(f"select count(*) from raw.maillog where {w}").fetchone()[0]
        for k, w in COUNTED.items()
    }
    assert (n["received"], n["delivered"]) == (oracle["from"], oracle["to"])
    # every connection logs one `from=` line (accepted, all recipients rejected, or broken off)
    # or, without a transaction, `did not issue MAIL/EXPN/VRFY/ETRN`
    transactions, idle = con.execute(
        "select count(*) filter (where kind in ('from', 'from_no_rcpt', 'from_aborted')),"
        " count(*) filter (where message like '% did not issue MAIL/EXPN/VRFY/ETRN during connection %')"
        " from raw.maillog"
    ).fetchone()
    assert transactions + idle == oracle["connections"]


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_per_minute_counts_match_the_raw_lines(landed, run):
    con = landed(run)
    want = raw_minutes(run)
    for key, where in COUNTED.items():
        got = con.execute(f"select strftime(ts, '%H:%M'), count(*) from raw.maillog where {where} group by 1")
        assert Counter(dict(got.fetchall())) == want[key], key


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_user_unknown_rejects_are_the_clients_550s(landed, run):
    postal = (run / "postal.csv").read_text().splitlines()
    postal_550 = Counter(
        m[1] for ln in postal if (m := re.match(r"Server error:550 5\.1\.1 <([^>]+)>\.\.\. User unknown", ln))
    )
    con = landed(run)
    got = con.execute(
        "select recipient, smtp_code, enhanced_code, reject_stage, count(*) from raw.maillog"
        " where kind = 'reject' group by all"
    ).fetchall()
    assert {(code, enh, stage) for _, code, enh, stage, _ in got} == {(550, "5.1.1", "RCPT")}
    assert Counter({to: n for to, *_, n in got}) == postal_550
    # the transaction the reject ended holds no message
    assert con.execute(
        "select count(*) from raw.maillog where kind = 'from_no_rcpt' and nrcpt = 0"
    ).fetchone()[0] == sum(postal_550.values())


NOTICES = ROOT / "tests" / "fixtures" / "recorded" / "sendmail-notices"


def test_notices_limits_and_daemon_lines(landing_con):
    """A recorded run with bounces, a double bounce kept in dead.letter and the daemon's limits
    reached (the fixture's README): deliveries equal mailstats'; every delivery status notice is
    a bounce notice naming the notice's own queue id, as the raw line does; every limit reached
    is a warning; no sendmail line is left as `other`."""
    fid = 424243  # a file id of its own: the landing's parts folder may be shared
    land_file(landing_con, MaillogParser(), NOTICES / "maillog.gz", file_id=fid, year=2026)
    con = landing_con
    lines = gzip.decompress((NOTICES / "maillog.gz").read_bytes()).decode().splitlines()
    oracle = mailstats(NOTICES)
    sent_local = f"file_id = {fid} and kind = 'delivery' and status = 'sent' and mailer = 'local'"
    assert con.execute(f"select count(*) from raw.maillog where {sent_local}").fetchone()[0] == oracle["to"]

    notice = re.compile(r" sendmail\[\d+\]: (\w+): (\w+): (?:DSN|postmaster notify|return to sender): ")
    want = sorted(m.groups() for m in map(notice.search, lines) if m)
    got = con.execute(
        f"select queue_id, related_queue_id from raw.maillog where file_id = {fid} and kind = 'bounce_notice'"
        " order by all"
    ).fetchall()
    assert want and got == want

    limit = re.compile(
        r"(?:deferring|rejecting) connections on daemon |Saved message in |Possible SMTP RCPT flood"
    )
    warnings = con.execute(f"select count(*) from raw.maillog where file_id = {fid} and kind = 'warning'")
    warnings = warnings.fetchone()[0]
    assert warnings == sum(bool(limit.search(t)) for t in lines) > 0
    other = f"select count(*) from raw.maillog where file_id = {fid} and kind = 'other'"
    assert con.execute(other).fetchone()[0] == 0


LOGLEVEL_14 = ROOT / "tests" / "fixtures" / "recorded" / "sendmail-loglevel-14"


def test_loglevel_14_counts_match_mailstats_and_the_raw_lines(landing_con):
    """A recorded run with LogLevel 14 (the fixture's README): messages received plus the
    notices sendmail made, deliveries and connections equal mailstats'; received, delivered and
    rejected per minute, deferred and bounced per run equal the raw lines' counts; no sendmail
    line is left as `other`."""
    fid = 424244  # a file id of its own: the landing's parts folder may be shared
    land_file(landing_con, MaillogParser(), LOGLEVEL_14 / "maillog.gz", file_id=fid, year=2026)
    con = landing_con
    oracle = mailstats(LOGLEVEL_14)
    assert_received_and_delivered(con, fid, oracle)
    transactions, idle = con.execute(
        "select count(*) filter (where kind in ('from', 'from_no_rcpt', 'from_aborted')),"
        " count(*) filter (where kind = 'idle_connection')"
        f" from raw.maillog where file_id = {fid}"
    ).fetchone()
    assert transactions + idle == oracle["connections"]

    want = raw_minutes(LOGLEVEL_14)
    for key, where in COUNTED.items():
        q = f"select strftime(ts, '%H:%M'), count(*) from raw.maillog where file_id = {fid} and {where}"
        got = con.execute(q + " group by 1")
        assert Counter(dict(got.fetchall())) == want[key], key
    assert sum(want["rejected"].values()) > 0

    lines = gzip.decompress((LOGLEVEL_14 / "maillog.gz").read_bytes()).decode().splitlines()
    stats = Counter(m[1] for t in lines if (m := re.search(r": to=.*, stat=(\w+)", t)))
    counted = dict(
        con.execute(
            f"select counts_as, count(*) from raw.maillog where file_id = {fid} group by 1"
        ).fetchall()
    )
    bounced = sum(v for k, v in stats.items() if k not in ("Sent", "Deferred", "queued"))
    assert (counted["deferred"], counted["bounced"]) == (stats["Deferred"], bounced)
    assert counted["deferred"] > 0 and bounced > 0
    assert con.execute(
        f"select count(*) from raw.maillog where file_id = {fid} and kind = 'other'"
    ).fetchone() == (0,)


def test_loglevel_14_lines_and_fields(landing_con):
    """The lines LogLevel 14 adds are understood, and each from= and to= line's fields equal
    the raw line's (read here by regex)."""
    fid = 424245
    land_file(landing_con, MaillogParser(), LOGLEVEL_14 / "maillog.gz", file_id=fid, year=2026)
    con = landing_con
    lines = gzip.decompress((LOGLEVEL_14 / "maillog.gz").read_bytes()).decode().splitlines()
    body = [SM.match(t) for t in lines]

    def kinds(pattern: str) -> Counter:
        hit = [n for n, m in enumerate(body, 1) if m and re.match(pattern, m[4])]
        got = con.execute(f"select line_no, kind from raw.maillog where file_id = {fid}").fetchall()
        by_line = dict(got)
        return Counter(by_line[n] for n in hit)

    # a connection (no queue id yet: NOQUEUE), each message's end, alias expansions
    connects = [m for m in body if m and m[3] == "NOQUEUE" and m[4].startswith("connect from ")]
    assert kinds(r"connect from ") == Counter(connect=len(connects)) and connects
    got = con.execute(
        f"select client_ip, count(*) from raw.maillog where file_id = {fid} and kind = 'connect' group by 1"
    ).fetchall()
    assert dict(got) == Counter(re.search(r"\[([^\]]+)\]$", m[4])[1] for m in connects)
    done = [m[3] for m in body if m and m[4].startswith("done; delay=")]
    assert kinds(r"done; delay=") == Counter(removed=len(done))
    got = con.execute(f"select queue_id from raw.maillog where file_id = {fid} and kind = 'removed'")
    assert sorted(q for (q,) in got.fetchall()) == sorted(done)
    assert kinds(r"alias <[^>]+> => ") == Counter(
        alias=sum(1 for m in body if m and m[4].startswith("alias <"))
    )
    # a session's milter and SASL state is no event; the daemon's start is its own lines
    assert set(kinds(r"Milter: |AUTH warning: |error: safesasl\(")) == {"milter_notice", "auth_notice"}
    assert set(kinds(r"started as: |starting daemon |engine=")) == {"master"}
    # STARTTLS is no queue id
    assert con.execute(
        f"select count(*) from raw.maillog where file_id = {fid} and queue_id = 'STARTTLS'"
    ).fetchone() == (0,)

    froms = {}
    tos = {}
    for n, m in enumerate(body, 1):
        if not m:
            continue
        if m[4].startswith("from="):
            f = dict(re.findall(r"(\w+)=(<[^>]*>|[^,]*)", m[4]))
            ip = re.search(r"relay=.*\[([^\]]+)\]", m[4])[1]
            froms[n] = (
                f["from"].strip("<>"),
                int(f["size"]),
                int(f["nrcpts"]),
                f.get("msgid", "").strip("<>") or None,
                ip,
            )
        elif m[4].startswith("to="):
            to = re.match(r"to=(.*?), [a-z_]+=", m[4])[1]
            # an address in angles, a program or file recipient in quotes
            to = to[1:-1] if to[:1] in ("<", '"') else to
            dsn = re.search(r", dsn=([\d.]+)", m[4])[1]
            mailer = re.search(r", mailer=([^,]*)", m[4])[1]
            reply = re.search(r", reply=(\d{3})[ -]", m[4])
            tos[n] = (m[3], to, dsn, mailer, int(reply[1]) if reply else None)
    got = con.execute(
        f"select line_no, sender, size, nrcpt, message_id, client_ip from raw.maillog where file_id = {fid}"
        " and kind in ('from', 'from_no_rcpt', 'from_aborted')"
    ).fetchall()
    assert froms and {n: tuple(r) for n, *r in got} == froms
    got = con.execute(
        f"select line_no, queue_id, recipient, dsn, mailer, smtp_code from raw.maillog where file_id = {fid}"
        " and kind = 'delivery'"
    ).fetchall()
    assert tos and {n: tuple(r) for n, *r in got} == tos
    assert any(t[4] for t in tos.values())  # some delivery got a reply= code


RELAY = ROOT / "tests" / "fixtures" / "recorded" / "sendmail-relay-smarthost"


def test_smart_host_counts_match_mailstats_and_the_sink(landing_con):
    """A recorded run relaying everything to a smart host, an SMTP sink answering 250, 450 or
    550 (the fixture's README): messages received over SMTP and the notices sendmail made
    equal mailstats' `esmtp` and `local` messages from; deliveries equal mailstats' messages to
    and the sink's accepted messages; deferrals and bounces equal the sink's 450 and 550
    replies and the raw `stat=` lines; no line is left as `other`."""
    fid = 424246
    land_file(landing_con, MaillogParser(), RELAY / "maillog.gz", file_id=fid, year=2026)
    con = landing_con
    mta = (ORACLES / RELAY.name / "mailstats-p.txt").read_text().split("MTA statistics...", 1)[1]
    frm = {
        m[2]: int(m[1])
        for m in re.finditer(r"^\s*\d+\s+(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+\d+\s+(\w+)$", mta, re.M)
    }
    to = int(re.search(r"^ T\s+\d+\s+\d+\s+(\d+)", mta, re.M)[1])
    sink = sink_record(RELAY.name)
    replies = Counter(int(r[3]) for r in sink if r[1] == "RCPT")
    accepted = [r for r in sink if r[1] == "DATA"]
    counts = dict(
        con.execute(
            f"select counts_as, count(*) from raw.maillog where file_id = {fid} group by 1"
        ).fetchall()
    )
    notices = con.execute(
        f"select count(*) from raw.maillog where file_id = {fid} and kind = 'bounce_notice'"
    ).fetchone()[0]
    assert (counts["received"], notices) == (frm["esmtp"], frm["local"])
    assert counts["delivered"] == to == len(accepted) == replies[250]
    lines = gzip.decompress((RELAY / "maillog.gz").read_bytes()).decode().splitlines()
    stats = Counter(m[1] for t in lines if (m := re.search(r": to=.*, stat=(\w+)", t)))
    assert counts["deferred"] == replies[450] == stats["Deferred"] > 0
    assert counts["bounced"] == replies[550] == stats["User"] > 0
    got = con.execute(
        f"select reply_text from raw.maillog where file_id = {fid} and kind = 'delivery' and status = 'sent'"
    ).fetchall()
    assert sorted(t.removeprefix("Ok: queued as ") for (t,) in got) == sorted(r[2] for r in accepted)
    assert con.execute(
        f"select count(*) from raw.maillog where file_id = {fid} and kind = 'other'"
    ).fetchone() == (0,)


def test_smart_host_delivery_fields_are_the_lines_own(landing_con):
    """Each to= line's recipient, mailer, relay, relay host, address and port, SMTP reply code,
    enhanced code, dsn and status equal the raw line's, read here by regex. The destination is
    an address literal, so the relay's name is the literal too (`relay=[127.0.0.1]
    [127.0.0.1]`): its host is the address inside. A success logs no reply code, only the
    reply's text (`stat=Sent (2.0.0 Ok: queued as X)`)."""
    fid = 424247
    land_file(landing_con, MaillogParser(), RELAY / "maillog.gz", file_id=fid, year=2026)
    con = landing_con
    lines = gzip.decompress((RELAY / "maillog.gz").read_bytes()).decode().splitlines()
    status = {"Sent": "sent", "Deferred": "deferred"}
    want = {}
    for n, t in enumerate(lines, 1):
        m = SM.match(t)
        if not (m and m[4].startswith("to=")):
            continue
        text = m[4]
        rcpt = re.match(r"to=<([^>]+)>, ", text)[1]
        mailer = re.search(r", mailer=([^,]+)", text)[1]
        relay = re.search(r", relay=([^,]+)", text)[1]
        host, ip, port = re.fullmatch(r"\[?([^\] ]+)\]? \[([^\]]+)\](?::(\d+))?", relay).groups()
        dsn = re.search(r", dsn=([\d.]+)", text)[1]
        reply = re.search(r", reply=(\d{3}) (\d\.\d+\.\d+) ", text)
        sent = re.search(r", stat=Sent \((\d\.\d+\.\d+) ", text)
        stat = re.search(r", stat=(\w+)", text)[1]
        want[n] = (
            rcpt,
            mailer,
            relay,
            host,
            ip,
            port and int(port),
            int(reply[1]) if reply else None,
            reply[2] if reply else sent and sent[1],
            dsn,
            status.get(stat, "bounced"),
        )
    got = con.execute(
        "select line_no, recipient, mailer, relay, relay_host, relay_ip, relay_port, smtp_code,"
        f" enhanced_code, dsn, status from raw.maillog where file_id = {fid} and kind = 'delivery'"
    ).fetchall()
    assert want and {n: tuple(r) for n, *r in got} == want
    assert {w[-1] for w in want.values()} == {"sent", "deferred", "bounced"}
    assert all(w[3] == w[4] == "127.0.0.1" for w in want.values())


MAX_CHILDREN = ROOT / "tests" / "fixtures" / "recorded" / "sendmail-max-children"


def test_max_children_and_a_lost_client_match_mailstats_and_the_sink(landing_con):
    """A recorded run past MaxDaemonChildren with a client lost after RCPT (the fixture's
    README): messages received plus notices, deliveries and rejects equal mailstats'; deferrals
    and bounces to the sink equal its 450s and 550s; received and delivered per minute equal
    the raw lines'; every refusal is a warning, the lost client a lost connection whose
    transaction's `from=` is no message; no sendmail line is left as `other`."""
    fid = 424246  # a file id of its own: the landing's parts folder may be shared
    land_file(landing_con, MaillogParser(), MAX_CHILDREN / "maillog.gz", file_id=fid, year=2026)
    con = landing_con
    oracle = mailstats(MAX_CHILDREN)
    assert_received_and_delivered(con, fid, oracle)
    q = f"select counts_as, count(*) from raw.maillog where file_id = {fid} group by 1"
    counted = dict(con.execute(q).fetchall())
    assert counted["rejected"] == oracle["rejected"] > 0
    sink = (ORACLES / MAX_CHILDREN.name / "sink.log").read_text().splitlines()
    replies = Counter(t.split()[-1] for t in sink if " RCPT " in t)
    assert (counted["deferred"], counted["bounced"]) == (replies["450"], replies["550"])

    want = raw_minutes(MAX_CHILDREN)
    for key in ("received", "delivered"):
        q = f"select strftime(ts, '%H:%M'), count(*) from raw.maillog where file_id = {fid}"
        q += f" and {COUNTED[key]} group by 1"
        assert Counter(dict(con.execute(q).fetchall())) == want[key], key

    lines = gzip.decompress((MAX_CHILDREN / "maillog.gz").read_bytes()).decode().splitlines()
    refused = sum("rejecting connections on daemon " in t for t in lines)
    lost = [re.search(r": (\w+): lost input channel from ", t) for t in lines]
    lost = [m[1] for m in lost if m]
    assert refused > 0 and lost
    got = con.execute(
        f"""select count(*) filter (where kind = 'warning'
                                          and detail like 'rejecting connections on daemon %'),
                   list(queue_id order by line_no) filter (where kind = 'lost_connection'),
                   list(queue_id order by line_no) filter (where kind = 'from_aborted')
            from raw.maillog where file_id = {fid}"""
    ).fetchone()
    assert got == (refused, lost, lost)
    other = f"select count(*) from raw.maillog where file_id = {fid} and kind = 'other'"
    assert con.execute(other).fetchone()[0] == 0


QUEUE_ONLY = ROOT / "tests" / "fixtures" / "recorded" / "sendmail-818-queue-only"


def test_queue_only_relay_matches_mailstats_the_sink_and_the_queue(landing_con):
    """A recorded sendmail 8.18 run delivering from the queue only, relaying to a sink that
    defers and refuses (the fixture's README): messages received plus notices and deliveries
    equal mailstats'; deferrals equal the sink's 450s, bounces the `dsn=5` lines, rejects the
    `User unknown` lines; the messages still deferred at the end are `mailq`'s; an unreadable
    .forward is a warning; no sendmail line is left as `other`."""
    fid = 424350  # a file id of its own: the landing's parts folder may be shared
    land_file(landing_con, MaillogParser(), QUEUE_ONLY / "maillog.gz", file_id=fid, year=2026)
    con = landing_con
    oracle = mailstats(QUEUE_ONLY)
    rows = f"from raw.maillog where file_id = {fid}"
    assert_received_and_delivered(con, fid, oracle)
    lines = gzip.decompress((QUEUE_ONLY / "maillog.gz").read_bytes()).decode().splitlines()
    sink = gzip.decompress((ORACLES / QUEUE_ONLY.name / "sink.log.gz").read_bytes()).decode()
    replies = Counter(r.split()[-1] for r in sink.splitlines() if r.split()[1] == "RCPT")
    counted = dict(con.execute(f"select counts_as, count(*) {rows} group by 1").fetchall())
    bounced = sum(1 for t in lines if re.search(r": to=.*, dsn=5\.", t))
    unknown = sum(1 for t in lines if re.search(r": <[^>]+>\.\.\. User unknown$", t))
    assert (counted["deferred"], counted["bounced"], counted["rejected"]) == (
        replies["450"],
        bounced,
        unknown,
    )
    queue = (ORACLES / QUEUE_ONLY.name / "mailq-at-end.txt").read_text()
    deferred = con.execute(
        f"select list(queue_id order by queue_id) from raw.maillog_messages"
        f" where file_id = {fid} and has_lines = 1 and final_status = 'deferred'"
    ).fetchone()[0]
    assert deferred == sorted(re.findall(r"^(\w{14})\s+\d+ ", queue, re.M))
    forward = sum(1 for t in lines if re.search(r": forward \S+: Permission denied$", t))
    got = con.execute(
        f"select count(*) filter (where kind = 'warning' and detail like 'forward %'),"
        f" count(*) filter (where kind = 'other') {rows}"
    ).fetchone()
    assert got == (forward, 0) and forward > 0


MILTER = ROOT / "tests" / "fixtures" / "recorded" / "sendmail-818-milter-discard"
QUEUE_RETURN = ROOT / "tests" / "fixtures" / "recorded" / "sendmail-818-queue-return"
# `sm-mta[pid]: QID: text` (the daemon named by `-L sm-mta`), or the submission agent's `sendmail[pid]`
SM_MTA = re.compile(r" (?:sm-mta|sendmail)\[\d+\]: (?:(\w+): )?(.*)$")


def test_milter_refusals_and_discards(landing_con):
    """A run whose milter refuses and tempfails recipients and whole messages, with an access
    map's DISCARD and REJECT (the fixture's README): each refusal the milter recorded deciding
    is one reject, at RCPT or at the message's end, with its code; the `to=` lines after a
    refused message and a discarded one are no bounce; the bounces are the `to=` lines of a
    mailer that failed; delivered and discarded equal mailstats'; no line is `other`."""
    fid = 424380  # a file id of its own: the landing's parts folder may be shared
    land_file(landing_con, MaillogParser(), MILTER / "maillog.gz", file_id=fid, year=2026)
    con = landing_con
    rows = f"from raw.maillog where file_id = {fid}"
    lines = gzip.decompress((MILTER / "maillog.gz").read_bytes()).decode().splitlines()
    texts = [m[2] for t in lines if (m := SM_MTA.search(t))]

    decisions = Counter(
        (f[1], f[-1])
        for f in (ln.split() for ln in (ORACLES / MILTER.name / "milter.log").read_text().splitlines())
        if f[1] in ("RCPT", "EOM") and f[-1] in ("reject", "tempfail")
    )
    got = Counter(
        dict(
            con.execute(
                f"""select reject_stage || ' ' || smtp_code, count(*) {rows}
                    and kind = 'reject' and (reason like '%milter%') group by 1"""
            ).fetchall()
        )
    )
    want = Counter(
        {
            "RCPT 550": decisions["RCPT", "reject"],
            "RCPT 451": decisions["RCPT", "tempfail"],
            "DATA 550": decisions["EOM", "reject"],
            "DATA 451": decisions["EOM", "tempfail"],
        }
    )
    assert all(want.values()) and got == want

    mailer_failed = sum(
        1
        for t in texts
        if t.startswith("to=") and ", mailer=" in t and not re.search(r", stat=(?:Sent|Deferred|queued)\b", t)
    )
    bounced = con.execute(f"select count(*) {rows} and counts_as = 'bounced'").fetchone()[0]
    assert bounced == mailer_failed
    oracle = mailstats(MILTER)
    mta = (ORACLES / MILTER.name / "mailstats-p.txt").read_text().split("MTA statistics...", 1)[1]
    discarded = int(re.search(r"^ T(?:\s+\d+){5}\s+(\d+)", mta, re.M)[1])
    got = con.execute(f"select count(*) {rows} and kind = 'delivery' and status = 'discarded'").fetchone()[0]
    assert got == discarded == sum(1 for t in texts if t.endswith(", stat=discarded")) > 0
    delivered = con.execute(
        f"select count(*) {rows} and counts_as = 'delivered' and program = 'sm-mta'"
    ).fetchone()[0]
    assert delivered == oracle["to"]
    assert con.execute(f"select count(*) {rows} and kind = 'other'").fetchone()[0] == 0


SM_NOTICE = re.compile(r"\]: (\w+): (\w+): (?:DSN|postmaster notify|return to sender|sender notify): (.*)$")


def landed_with_notices(con, run: Path, fid: int) -> tuple[str, list[str], list[tuple[str, str, str]]]:
    """Land `run`'s maillog.gz as file `fid`: the SQL `from` clause of its rows, its raw lines,
    and the notices sendmail made (queue id, the notice's own queue id, text) read off them."""
    land_file(con, MaillogParser(), run / "maillog.gz", file_id=fid, year=2026)
    lines = gzip.decompress((run / "maillog.gz").read_bytes()).decode().splitlines()
    found = [m.groups() for t in lines if (m := SM_NOTICE.search(t))]
    return f"from raw.maillog where file_id = {fid}", lines, found


def assert_from_and_to_equal_mailstats(con, rows: str, run: Path, found: list) -> dict:
    """Received plus every notice sendmail made equal mailstats' `from` (and the notices read
    off the lines), deliveries its `to`; returns the rows' count per kind."""
    oracle = mailstats(run)
    kinds = dict(con.execute(f"select kind, count(*) {rows} group by 1").fetchall())
    received = con.execute(f"select count(*) {rows} and counts_as = 'received'").fetchone()[0]
    made = sum(kinds.get(k, 0) for k in ("bounce_notice", "defer_notice", "expired"))
    assert received + made == oracle["from"] == received + len(found)
    delivered = con.execute(f"select count(*) {rows} and counts_as = 'delivered'").fetchone()[0]
    assert delivered == oracle["to"]
    return kinds


def test_queue_return_expires_deferred_messages(landing_con):
    """A run whose deferred messages are returned after Timeout.queuereturn (the fixture's
    README): each `Cannot send message for` notice is its message's expiry, each `Warning:`
    notice a delay notice; received plus every notice sendmail made equal mailstats' `from`,
    deliveries its `to`; with the queue empty at the end (mailq), no message ends deferred."""
    fid = 424381
    con = landing_con
    rows, lines, found = landed_with_notices(con, QUEUE_RETURN, fid)
    expired = sorted((q, n) for q, n, why in found if why.startswith("Cannot send message for "))
    got = con.execute(
        f"select queue_id, related_queue_id {rows} and kind = 'expired' order by all"
    ).fetchall()
    assert expired and got == expired
    warned = sum(1 for *_, why in found if why.startswith("Warning: "))
    assert con.execute(f"select count(*) {rows} and kind = 'defer_notice'").fetchone()[0] == warned > 0

    kinds = assert_from_and_to_equal_mailstats(con, rows, QUEUE_RETURN, found)
    assert "is empty" in (ORACLES / QUEUE_RETURN.name / "mailq-at-end.txt").read_text()
    final = dict(
        con.execute(
            f"""select final_status, count(*) from raw.maillog_messages
                where file_id = {fid} and has_lines = 1 group by 1"""
        ).fetchall()
    )
    assert final.get("deferred", 0) == 0 and final.get("expired") == len(expired)
    assert "other" not in kinds


QUEUE_RETURN_815 = ROOT / "tests" / "fixtures" / "recorded" / "sendmail-815-queue-return"


def test_sendmail_815_queue_return_matches_mailstats(landing_con):
    """sendmail 8.15 (Debian 11) returning deferred messages after Timeout.queuereturn (the
    fixture's README): received plus every notice sendmail made (bounces, delay notices,
    returns) equal mailstats' `from`, deliveries its `to`; each `Cannot send message for` is
    its message's expiry and no message ends deferred (the queue was empty); a client address
    without a name (`gethostbyaddr(ip) failed: 1`) is a warning, nothing is `other`."""
    fid = 424382
    con = landing_con
    rows, lines, found = landed_with_notices(con, QUEUE_RETURN_815, fid)
    expired = sum(1 for *_, why in found if why.startswith("Cannot send message for "))
    kinds = assert_from_and_to_equal_mailstats(con, rows, QUEUE_RETURN_815, found)
    final = dict(
        con.execute(
            f"select final_status, count(*) from raw.maillog_messages"
            f" where file_id = {fid} and has_lines = 1 group by 1"
        ).fetchall()
    )
    assert final.get("deferred", 0) == 0 and final.get("expired") == expired > 0
    unnamed = sum(1 for t in lines if re.search(r"\]: gethostbyaddr\([^)]*\) failed: ", t))
    got = con.execute(
        f"select count(*) {rows} and kind = 'warning' and message like 'gethostbyaddr(%'"
    ).fetchone()[0]
    assert got == unnamed > 0
    assert "other" not in kinds
