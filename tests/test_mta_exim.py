"""Recorded Exim runs read by the project: 4.96 (Debian 12, samples/mtas/exim-*) and 4.98 (Debian
13, tests/fixtures/recorded/exim-498-*), checked against eximstats (captured right after each
run: tests/fixtures/oracles/<run>/eximstats.txt) and against the raw mainlog, rejectlog and
postal output themselves."""

from __future__ import annotations

import gzip
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from conftest import found, land_file, sink_record

from ingest.detect import detect
from ingest.parsers.base import ParseContext
from ingest.parsers.exim_rejectlog import EximRejectlogParser
from ingest.parsers.maillog import MaillogParser
from ingest.source import FileSource

ROOT = Path(__file__).resolve().parents[1]
RUNS = found(
    sorted((ROOT / "samples" / "mtas").glob("exim-*"))
    + sorted((ROOT / "tests" / "fixtures" / "recorded").glob("exim-498-*")),
    "Exim runs",
)
ORACLES = ROOT / "tests" / "fixtures" / "oracles"


def postal_output(run: Path) -> Path:
    """A sample run keeps postal.csv beside its log; a recorded fixture in its oracle folder."""
    own = run / "postal.csv"
    return own if own.exists() else ORACLES / run.name / "postal.csv"


def eximstats(run: Path) -> dict:
    """eximstats -nr -t0 -h60: the grand totals and the per-minute histograms ('HH:MM' keys)."""
    text = (ORACLES / run.name / "eximstats.txt").read_text()
    totals = {}
    for label in ("Received", "Delivered"):
        m = re.search(rf"^\s+{label}\s+\S+\s+(\d+)", text, re.M)
        totals[label.lower()] = int(m.group(1))
    totals["rejects"] = int(re.search(r"^\s+Rejects\s+(\d+)", text, re.M).group(1))
    hists = {}
    for title, key in (("Messages received per minute", "received"), ("Deliveries per minute", "delivered")):
        section = text.split(title, 1)[1].split("\n\n", 2)[1]
        hour, per_min = None, {}
        for line in section.splitlines():
            m = re.match(r"^(\d\d):00\s+(\d+)|^\s+:(\d\d)\s+(\d+)", line)
            if m is None:
                continue
            if m.group(1) is not None:
                hour = m.group(1)
                minute, n = f"{hour}:00", int(m.group(2))
            else:
                minute, n = f"{hour}:{m.group(3)}", int(m.group(4))
            if n:
                per_min[minute] = n
        hists[key + "_per_minute"] = per_min
    return totals | hists


def mainlog_lines(run: Path) -> list[str]:
    return gzip.decompress((run / "mainlog.gz").read_bytes()).decode().splitlines()


@pytest.fixture
def landed(landing_con):
    def land(run: Path):
        land_file(landing_con, MaillogParser(), run / "mainlog.gz", year=2026)
        return landing_con

    return land


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_counts_match_eximstats(landed, run):
    con = landed(run)
    oracle = eximstats(run)
    got = dict(
        con.execute(
            "select kind, count(*) from raw.maillog"
            " where kind in ('arrival', 'delivery', 'reject') group by kind"
        ).fetchall()
    )
    assert (got["arrival"], got["delivery"], got["reject"]) == (
        oracle["received"],
        oracle["delivered"],
        oracle["rejects"],
    )
    for kind, key in (("arrival", "received"), ("delivery", "delivered")):
        per_min = dict(
            con.execute(
                f"select strftime(ts, '%H:%M'), count(*) from raw.maillog where kind = '{kind}' group by 1"
            ).fetchall()
        )
        assert per_min == oracle[key + "_per_minute"], key


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_rcpt_rejects_are_permanent_with_client(landed, run):
    # the client got a 550 for each: postal logged it (`Server error:550 Unrouteable address`)
    postal = postal_output(run).read_text().splitlines()
    postal_550 = sum(1 for ln in postal if ln.startswith("Server error:550"))
    raw = [ln for ln in mainlog_lines(run) if " rejected RCPT <" in ln]
    clients = Counter(re.search(r" H=(\S+ \[[^\]]+\])", " " + ln.split(" ", 2)[2]).group(1) for ln in raw)
    con = landed(run)
    got = con.execute(
        "select smtp_code, reject_stage, client, count(*) from raw.maillog where kind = 'reject' group by all"
    ).fetchall()
    assert [(code, stage) for code, stage, _, _ in got] == [(550, "RCPT")] * len(got)
    assert {c: n for _, _, c, n in got} == dict(clients)
    assert sum(n for *_, n in got) == len(raw) == postal_550


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_local_delivery_recipient_is_the_address(landed, run):
    # `=> user105 <user105@bench.test> R=...`: the address in angle brackets, per recipient
    want = Counter(m.group(1) for ln in mainlog_lines(run) if (m := re.search(r" => \S+ <([^>]+)> ", ln)))
    con = landed(run)
    q = "select recipient, count(*) from raw.maillog where kind = 'delivery' group by 1"
    got = Counter(dict(con.execute(q).fetchall()))
    assert got == want


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_rejectlog_is_the_mainlogs_copy(landing_con, run):
    path = run / "rejectlog.gz"
    assert detect(FileSource(path, path.name)).format == "exim_rejectlog"
    counts = land_file(landing_con, EximRejectlogParser(), path)
    raw = gzip.decompress(path.read_bytes()).decode().splitlines()
    mainlog_rejects = [ln for ln in mainlog_lines(run) if " rejected RCPT <" in ln]
    assert raw == mainlog_rejects
    assert (counts.total, counts.noise, counts.quarantined) == (len(raw), len(raw), 0)


def test_a_mainlog_of_refused_connections_is_a_maillog_of_warnings(tmp_path):
    """Exim at smtp_accept_max logs only `Connection from [ip] refused: ...`: such a mainlog is
    still a maillog, and each line a warning with the 421 the client got (counted by regex)."""
    text = "".join(
        f"2026-11-27 02:52:5{i} Connection from [127.0.0.1] refused: too many connections\n" for i in range(3)
    )
    path = tmp_path / "mainlog"
    path.write_text(text)
    assert detect(FileSource(path, path.name)).format == "maillog"
    lines = list(enumerate(text.splitlines(keepends=True), start=1))
    ledger = MaillogParser().parse(iter(lines), ParseContext(year=2026))
    kinds = [item["kind"] for n, _ in lines for item in ledger.items[n]]
    assert kinds == ["warning"] * len(re.findall(r"^\S+ \S+ Connection from \[[^\]]+\] refused", text, re.M))
    assert {item["smtp_code"] for n, _ in lines for item in ledger.items[n]} == {421}


QUEUE_RUNNER = ROOT / "tests" / "fixtures" / "recorded" / "exim-queue-runner"


def test_queue_runners_locked_and_frozen_messages(landed):
    """A recorded run whose queue runners met messages another runner held and bounces Exim
    froze (the fixture's README): its counts equal eximstats'; every lock, skip and freeze line
    is understood (none left as `other`), a freeze is a warning with Exim's wording, and the
    failed addresses are the raw lines' own."""
    con = landed(QUEUE_RUNNER)
    oracle = eximstats(QUEUE_RUNNER)
    got = con.execute(
        "select count(*) filter (where kind = 'arrival'),"
        " count(*) filter (where kind = 'delivery' and status = 'sent'),"
        " count(*) filter (where kind = 'reject') from raw.maillog"
    ).fetchone()
    assert got == (oracle["received"], oracle["delivered"], oracle["rejects"])
    per_min = dict(
        con.execute(
            "select strftime(ts, '%H:%M'), count(*) from raw.maillog where kind = 'arrival' group by 1"
        ).fetchall()
    )
    assert per_min == oracle["received_per_minute"]

    lines = mainlog_lines(QUEUE_RUNNER)
    frozen = [t for t in lines if re.search(r" Frozen(?: \(.*\))?$", t)]
    skip = re.compile(r" (?:Spool file (?:for \S+ )?is locked|Message is frozen)\b")
    skipped = [t for t in lines if skip.search(t)]
    assert frozen and skipped
    assert con.execute("select count(*) from raw.maillog where kind = 'other'").fetchone()[0] == 0
    warnings = con.execute(
        "select detail from raw.maillog where kind = 'warning' and severity = 'warning' order by line_no"
    ).fetchall()
    assert [d for (d,) in warnings] == [t.split(" ", 3)[3] for t in frozen]
    # a runner's skip names its message; `Start/End queue run` lines name none
    runs = con.execute("select count(*) from raw.maillog where kind = 'queue_run' and queue_id <> ''")
    assert runs.fetchone()[0] == len(skipped)
    failed = sorted(re.search(r" \*\* ([^\s:]+)", t).group(1) for t in lines if " ** " in t)
    got = con.execute("select recipient from raw.maillog where kind = 'delivery' and status = 'bounced'")
    assert sorted(r for (r,) in got.fetchall()) == failed


LOG_SELECTOR_ALL = ROOT / "tests" / "fixtures" / "recorded" / "exim-log-selector-all"


def test_every_log_selector_counts_match_eximstats(landed):
    """A recorded run with `log_selector = +all` (the fixture's README): received, delivered
    and rejected, per run and per minute, and the messages with a deferral or a failure
    (eximstats' "Delayed" and "Failed") equal eximstats'; no line is left as `other`."""
    con = landed(LOG_SELECTOR_ALL)
    oracle = eximstats(LOG_SELECTOR_ALL)
    text = (ORACLES / LOG_SELECTOR_ALL.name / "eximstats.txt").read_text()
    delayed, failed = map(
        int, re.search(r"^\s+Received\s+\S+\s+\d+\s+\d+\s+(\d+)\s+\S+\s+(\d+)", text, re.M).groups()
    )
    counts = dict(con.execute("select counts_as, count(*) from raw.maillog group by 1").fetchall())
    assert (counts["received"], counts["delivered"], counts["rejected"]) == (
        oracle["received"],
        oracle["delivered"],
        oracle["rejects"],
    )
    messages = con.execute(
        "select count(distinct queue_id) filter (where counts_as = 'deferred'),"
        " count(distinct queue_id) filter (where counts_as = 'bounced') from raw.maillog"
    ).fetchone()
    assert messages == (delayed, failed)
    for key in ("received", "delivered"):
        q = f"select strftime(ts, '%H:%M'), count(*) from raw.maillog where counts_as = '{key}' group by 1"
        assert dict(con.execute(q).fetchall()) == oracle[key + "_per_minute"], key
    assert con.execute("select count(*) from raw.maillog where kind = 'other'").fetchone()[0] == 0


def test_every_log_selector_fields_are_the_lines_own(landed):
    """With every selector on, arrivals carry `I=`, `RT=`, a subject and Exim's own `id*=`,
    and session lines name their client: each field equals the raw line's, read here by regex."""
    con = landed(LOG_SELECTOR_ALL)
    lines = mainlog_lines(LOG_SELECTOR_ALL)
    stamp = r"^\S+ \S+ \[\d+\] "
    arrival = re.compile(
        stamp + r"\S+ <= (\S+) (?:R=(\S+) )?(?:U=\S+ )?(?:H=(?:\(([^)]*)\) )?\[([^\]]+)\]:(\d+) I=\S+ )?"
        r"P=(\S+) .*?S=(\d+) .*? id\*?=(\S+) T=\""
    )
    want = {}
    for n, t in enumerate(lines, 1):
        if m := arrival.match(t):
            sender, related, helo, ip, port, proto, size, msgid = m.groups()
            want[n] = (sender.strip("<>"), int(size), msgid, helo, ip, port and int(port), related, proto)
    got = con.execute(
        "select line_no, sender, size, message_id, helo, client_ip, client_port, related_queue_id, proto"
        " from raw.maillog where kind = 'arrival'"
    ).fetchall()
    assert want and {n: tuple(rest) for n, *rest in got} == want
    assert sum(1 for t in lines if " id*=" in t) > 0 and None not in {w[2] for w in want.values()}
    # a delivery's recipient is the address (in angle brackets for a local part), never the
    # router or transport, and a local delivery has no relay
    delivery = re.compile(stamp + r"\S+ (?:=>|==|\*\*) (\S+?):? (?:<([^>]+)> )?")
    want_rcpt = Counter(m.group(2) or m.group(1) for t in lines if (m := delivery.match(t)))
    got_rcpt = con.execute("select recipient, count(*) from raw.maillog where kind = 'delivery' group by 1")
    assert Counter(dict(got_rcpt.fetchall())) == want_rcpt
    assert con.execute(
        "select count(*) from raw.maillog where kind = 'delivery' and relay is not null"
    ).fetchone() == (0,)
    # the session lines that name no message: each kind with the client's address and port
    session = {
        "connect": r"SMTP connection from .*\(TCP/IP connection count = \d+\)$",
        "disconnect": r"SMTP connection from .* closed by QUIT$",
        "idle_connection": r"no MAIL in SMTP connection from ",
        "protocol_error": r"SMTP (?:syntax|protocol) error in ",
        "incomplete_transaction": r"H=.* incomplete transaction \(",
    }
    for kind, pattern in session.items():
        raw = [t for t in lines if re.match(stamp + pattern, t)]
        clients = Counter(re.search(r"\[([^\]]+)\]:(\d+) I=", t).groups() for t in raw)
        q = f"select client_ip, client_port::varchar, count(*) from raw.maillog where kind = '{kind}'"
        q += " group by all"
        got = Counter({(ip, port): n for ip, port, n in con.execute(q).fetchall()})
        assert raw and got == clients, kind


RELAY = ROOT / "tests" / "fixtures" / "recorded" / "exim-relay-smarthost"


def test_smarthost_counts_match_eximstats_and_the_sink(landed):
    """A recorded run relaying everything to a smarthost, an SMTP sink answering 250, 450 or 550
    (the fixture's README): received and delivered equal eximstats' and the sink's accepted
    messages; the messages with a deferral or a failure equal eximstats' "Delayed" and
    "Failed"; the deferrals and bounces that got the sink's 450 and 550 equal the sink's own
    count of them; every `==` line is a deferral; no line is left as `other`."""
    con = landed(RELAY)
    text = (ORACLES / RELAY.name / "eximstats.txt").read_text()
    received, delayed, failed = map(
        int, re.search(r"^\s+Received\s+\S+\s+(\d+)\s+\d+\s+(\d+)\s+\S+\s+(\d+)", text, re.M).groups()
    )
    delivered = int(re.search(r"^\s+Delivered\s+\S+\s+(\d+)", text, re.M)[1])
    sink = sink_record(RELAY.name)
    replies = Counter(int(r[3]) for r in sink if r[1] == "RCPT")
    accepted = [r for r in sink if r[1] == "DATA"]
    counts = dict(con.execute("select counts_as, count(*) from raw.maillog group by 1").fetchall())
    assert (counts["received"], counts["delivered"]) == (received, delivered)
    assert counts["delivered"] == len(accepted) == replies[250]
    assert counts["bounced"] == replies[550] > 0
    messages = con.execute(
        "select count(distinct queue_id) filter (where counts_as = 'deferred'),"
        " count(distinct queue_id) filter (where counts_as = 'bounced') from raw.maillog"
    ).fetchone()
    assert messages == (delayed, failed)
    by_reply = dict(
        con.execute(
            "select smtp_code, count(*) from raw.maillog where counts_as = 'deferred' group by 1"
        ).fetchall()
    )
    lines = mainlog_lines(RELAY)
    skipped = sum(1 for t in lines if re.search(r" == \S+ routing defer \(-52\): retry time not reached$", t))
    assert by_reply == {450: replies[450], None: skipped} and skipped > 0
    assert counts["deferred"] == sum(1 for t in lines if re.match(r"^\S+ \S+ \S+ == ", t))
    # the sink's queue ids are the ones the deliveries name
    got = con.execute(
        "select reply_text from raw.maillog where kind = 'delivery' and status = 'sent'"
    ).fetchall()
    assert sorted(t.removeprefix("Ok: queued as ") for (t,) in got) == sorted(r[2] for r in accepted)
    assert con.execute("select count(*) from raw.maillog where kind = 'other'").fetchone()[0] == 0


def test_smarthost_delivery_fields_are_the_lines_own(landed):
    """Each delivery's recipient, relay, relay host, address and port, SMTP reply code,
    enhanced code and status equal the raw line's, read here by regex: `=> addr R=r T=t
    H=host [ip] C="250 2.0.0 ..."`, `== addr R=r T=t defer (-44) H=host [ip]: SMTP error from
    remote mail server after RCPT TO:<addr>: 450 4.2.0 ...` and `** ...: 550 5.1.1 ...`."""
    con = landed(RELAY)
    delivery = re.compile(
        r"^\S+ \S+ \S+ (=>|==|\*\*) (\S+) .*?(?: H=(\S+) \[([^\]]+)\](?::(\d+))?)?"
        r'(?: C="(\d{3}) (\d\.\d+\.\d+) [^"]*"|: SMTP error from remote mail server after [^:]+:<[^>]*>: '
        r"(\d{3}) (\d\.\d+\.\d+) .*)?$"
    )
    status = {"=>": "sent", "==": "deferred", "**": "bounced"}
    want = {}
    for n, t in enumerate(mainlog_lines(RELAY), 1):
        if m := delivery.match(t):
            flag, rcpt, host, ip, port, c_ok, e_ok, c_err, e_err = m.groups()
            relay = f"{host} [{ip}]" + (f":{port}" if port else "") if ip else None
            code = c_ok or c_err
            want[n] = (
                status[flag],
                rcpt,
                relay,
                host,
                ip,
                port and int(port),
                code and int(code),
                e_ok or e_err,
                None,
            )
    got = con.execute(
        "select line_no, status, recipient, relay, relay_host, relay_ip, relay_port, smtp_code,"
        " enhanced_code, dsn from raw.maillog where kind = 'delivery'"
    ).fetchall()
    assert want and {n: tuple(r) for n, *r in got} == want
    assert {w[0] for w in want.values()} == {"sent", "deferred", "bounced"}
    assert sum(1 for w in want.values() if w[6]) == sum(1 for w in want.values() if w[2])


RECORDED = ROOT / "tests" / "fixtures" / "recorded"
SYSLOG_RUNS = [RECORDED / "exim-syslog", RECORDED / "exim-syslog-no-timestamp"]
# rsyslog's traditional stamp, the host, `exim[pid]: `, then Exim's own stamp unless
# syslog_timestamp is false
SYSLOGGED = re.compile(
    r"^([A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d) \S+ exim\[(\d+)\]: (?:(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) )?"
)


def maillog_lines(run: Path) -> list[str]:
    return gzip.decompress((run / "maillog.gz").read_bytes()).decode().splitlines()


def syslog_lines(run: Path) -> list[tuple[re.Match, str]]:
    """(header match, Exim's text) per line; every line is Exim's."""
    out = []
    for line in maillog_lines(run):
        m = SYSLOGGED.match(line)
        assert m, line
        out.append((m, line[m.end() :]))
    return out


def land_syslog(con, run: Path):
    path = run / "maillog.gz"
    assert detect(FileSource(path, path.name)).format == "maillog"
    land_file(con, MaillogParser(), path, year=2026)
    return con


def assert_syslog_counts(con, run: Path, oracle: dict) -> dict:
    """Received and delivered, per run and per minute, and the messages with a deferral or a
    failure, against eximstats' ("Delayed" and "Failed"); returns the counts per `counts_as`."""
    text = (ORACLES / run.name / "eximstats.txt").read_text()
    delayed, failed = map(
        int, re.search(r"^\s+Received\s+\S+\s+\d+\s+\d+\s+(\d+)\s+\S+\s+(\d+)", text, re.M).groups()
    )
    counts = dict(con.execute("select counts_as, count(*) from raw.maillog group by 1").fetchall())
    assert (counts["received"], counts["delivered"]) == (oracle["received"], oracle["delivered"])
    for key in ("received", "delivered"):
        q = f"select strftime(ts, '%H:%M'), count(*) from raw.maillog where counts_as = '{key}' group by 1"
        assert dict(con.execute(q).fetchall()) == oracle[key + "_per_minute"], key
    messages = con.execute(
        "select count(distinct queue_id) filter (where counts_as = 'deferred'),"
        " count(distinct queue_id) filter (where counts_as = 'bounced') from raw.maillog"
    ).fetchone()
    assert messages == (delayed, failed) and delayed > 0 and failed > 0
    return counts


@pytest.mark.parametrize("run", SYSLOG_RUNS, ids=lambda p: p.name)
def test_syslog_counts_match_eximstats_and_postal(landing_con, run):
    """Exim logging to syslog (the fixture's README): received and delivered, per run and per
    minute, and the messages with a deferral or a failure equal eximstats'; each reject, which
    `syslog_duplication` writes twice (main and reject log), counts once: as many as the 550s
    postal got; no line is left as `other`."""
    con = land_syslog(landing_con, run)
    oracle = eximstats(run)
    counts = assert_syslog_counts(con, run, oracle)

    lines = syslog_lines(run)
    rejects = [(m[2], t) for m, t in lines if " rejected RCPT <" in t]
    # two identical lines of one pid, one after the other, per reject
    assert rejects[0::2] == rejects[1::2]
    postal = postal_output(run).read_text().splitlines()
    postal_550 = sum(1 for ln in postal if ln.startswith("Server error:550"))
    assert counts["rejected"] == len(rejects) // 2 == postal_550 > 0
    # eximstats counts both copies, and a host's `H=... Connection refused` as a reject too
    refused = sum(1 for _, t in lines if re.match(r"\S+ H=\S+ \[[^\]]+\] Connection refused$", t))
    assert oracle["rejects"] == len(rejects) + refused
    assert con.execute("select count(*) from raw.maillog where kind = 'other'").fetchone()[0] == 0


@pytest.mark.parametrize("run", SYSLOG_RUNS, ids=lambda p: p.name)
def test_syslog_stamps_and_pids_are_the_lines_own(landing_con, run):
    """A line's time is Exim's own stamp after the tag when it writes one, else the syslog
    stamp; its pid is the tag's."""
    con = land_syslog(landing_con, run)
    want = []
    for m, _ in syslog_lines(run):
        stamp = m[3] or "2026 " + m[1]
        fmt = "%Y-%m-%d %H:%M:%S" if m[3] else "%Y %b %d %H:%M:%S"
        want.append((datetime.strptime(stamp, fmt), int(m[2])))
    got = con.execute("select line_no, ts, pid from raw.maillog order by line_no").fetchall()
    # a reject's second copy is noise, not a row
    raw = maillog_lines(run)
    dup = {n for n, t in enumerate(raw, 1) if n > 1 and t == raw[n - 2]}
    assert [(ts, pid) for _, ts, pid in got] == [w for n, w in enumerate(want, 1) if n not in dup]
    assert len(got) == len(want) - len(dup) and dup


@pytest.mark.parametrize("run", SYSLOG_RUNS, ids=lambda p: p.name)
def test_syslog_relayed_deliveries_match_the_sink(landing_con, run):
    """The deliveries to sink.test carry the replies the SMTP sink recorded giving: one sent
    message per accepted DATA, one bounce per 550, one deferral per 450; the host errors for
    defer.test (`H=127.0.0.2 [127.0.0.2] Connection refused`) are warnings naming the host."""
    con = land_syslog(landing_con, run)
    sink = sink_record(run.name)
    replies = Counter(int(r[3]) for r in sink if r[1] == "RCPT")
    got = dict(
        con.execute(
            "select status || ' ' || coalesce(smtp_code::varchar, '-'), count(*) from raw.maillog"
            " where kind = 'delivery' and recipient like '%@sink.test' and relay is not null group by 1"
        ).fetchall()
    )
    assert got == {"sent 250": replies[250], "bounced 550": replies[550], "deferred 450": replies[450]}
    assert replies[250] == sum(1 for r in sink if r[1] == "DATA")
    host_error = re.compile(r"\S+ H=127\.0\.0\.2 \[127\.0\.0\.2\] Connection refused$")
    refused = [t for _, t in syslog_lines(run) if host_error.match(t)]
    warnings = con.execute(
        "select relay_ip, reason, count(*) from raw.maillog"
        " where kind = 'warning' and relay_ip is not null group by all"
    ).fetchall()
    assert warnings == [("127.0.0.2", "Connection refused", len(refused))] and refused


NODUP = RECORDED / "exim-syslog-nodup"
# RFC 3339 stamp, the host, `exim[pid]: `, then Exim's own stamp with milliseconds and [pid]
NODUP_LINE = re.compile(r"^\S+ \S+ exim\[(\d+)\]: (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) \[(\d+)\] (.*)$")


def test_syslog_without_duplication_in_rfc3339(landing_con):
    """Exim logging to syslog with `syslog_duplication = false` and `log_selector = +all`,
    through rsyslog's RFC 3339 format (the fixture's README): received and delivered, per run
    and per minute, and the messages with a deferral or a failure equal eximstats'; each reject
    is one line and counts once, as many as the 550s postal got; each line's time is Exim's
    own stamp to the millisecond, its pid the tag's; no line is left as `other`."""
    con = land_syslog(landing_con, NODUP)
    oracle = eximstats(NODUP)
    counts = assert_syslog_counts(con, NODUP, oracle)

    lines = [NODUP_LINE.match(t) for t in maillog_lines(NODUP)]
    assert all(lines)
    rejects = [m[4] for m in lines if " rejected RCPT <" in m[4]]
    postal = postal_output(NODUP).read_text().splitlines()
    postal_550 = sum(1 for ln in postal if ln.startswith("Server error:550"))
    assert counts["rejected"] == len(rejects) == postal_550 > 0
    # eximstats counts a host's `H=... Connection refused` as a reject too
    refused = sum(1 for m in lines if re.search(r" H=\S+ \[[^\]]+\]:\d+ Connection refused$", m[4]))
    assert oracle["rejects"] == len(rejects) + refused

    want = [(datetime.strptime(m[2], "%Y-%m-%d %H:%M:%S.%f"), int(m[1])) for m in lines]
    assert all(m[1] == m[3] for m in lines)
    got = con.execute("select ts, pid from raw.maillog order by line_no").fetchall()
    assert got == want
    assert con.execute("select count(*) from raw.maillog where kind = 'other'").fetchone()[0] == 0


PARTS = RECORDED / "exim-syslog-parts"


def test_syslog_parts_count_once(landing_con):
    """Exim writes an entry past 870 bytes, or of several lines, to syslog in numbered parts
    (the fixture's README): each arrival to 80 recipients comes as `[1/2] ... <= ...` and
    `[2/2] ...`, each refusal after DATA as its main log line and the reject log's copy
    `[1\\9] ...` to `[9/9] ...` with the headers. Every message smtp-source sent is received
    once, each refusal it got is one reject (as eximstats, which skips every part, counts
    them), the deliveries are eximstats'; no line is left as `other`."""
    con = land_syslog(landing_con, PARTS)
    oracle = eximstats(PARTS)
    lines = syslog_lines(PARTS)
    part = re.compile(r"^\[(\d+)([\\/])(\d+)\] ")
    first_parts = [t for _, t in lines if (m := part.match(t)) and m[1] == "1"]
    arrivals = [t.split()[3] for t in first_parts if re.match(r"\[1/2\] \S+ \S+ \S+ <= ", t)]
    refused = (ORACLES / PARTS.name / "smtp-source-spam.txt").read_text().count("550 message refused")
    sent_wide = 20  # smtp-source -m 20 -r 80: its output holds no error
    assert (ORACLES / PARTS.name / "smtp-source-wide.txt").read_text() == ""
    counts = dict(con.execute("select counts_as, count(*) from raw.maillog group by 1").fetchall())
    assert counts["received"] == len(arrivals) == sent_wide
    assert counts["delivered"] == oracle["delivered"] == sent_wide * 80
    assert counts["rejected"] == oracle["rejects"] == refused == 5
    got = con.execute("select queue_id from raw.maillog where kind = 'arrival' order by line_no").fetchall()
    assert [q for (q,) in got] == arrivals
    # an arrival's fields up to the cut: the first recipients of its `for` list are there
    size = con.execute("select distinct size, sender from raw.maillog where kind = 'arrival'").fetchall()
    assert size == [(306, "user1@bench.test")]
    assert con.execute("select count(*) from raw.maillog where kind = 'other'").fetchone()[0] == 0


SYSLOG_5424 = RECORDED / "exim-syslog-5424"


def test_rfc_5424_syslog_counts_match_eximstats(landing_con):
    """Exim logging to syslog through rsyslog's RFC 5424 format (`<PRI>1 STAMP HOST APP PROCID
    MSGID SD MSG`, the fixture's README): the file is a mail log; received and delivered, per
    run and per minute, and the messages with a deferral or a failure equal eximstats' on the
    mainlog; each row keeps the syslog host and Exim's pid; no line is left as `other`."""
    con = land_syslog(landing_con, SYSLOG_5424)
    oracle = eximstats(SYSLOG_5424)
    text = (ORACLES / SYSLOG_5424.name / "eximstats.txt").read_text()
    # messages delivered to more than one address: eximstats' Addresses, one delivery line each
    addresses = int(re.search(r"^\s+Delivered\s+\S+\s+\d+\s+(\d+)", text, re.M)[1])
    delayed, failed = map(
        int, re.search(r"^\s+Received\s+\S+\s+\d+\s+\d+\s+(\d+)\s+\S+\s+(\d+)", text, re.M).groups()
    )
    counts = dict(con.execute("select counts_as, count(*) from raw.maillog group by 1").fetchall())
    assert (counts["received"], counts["delivered"]) == (oracle["received"], addresses)
    per_min = (
        "select strftime(ts, '%H:%M'), count(*) from raw.maillog where counts_as = 'received' group by 1"
    )
    assert dict(con.execute(per_min).fetchall()) == oracle["received_per_minute"]
    messages = con.execute(
        "select count(distinct queue_id) filter (where counts_as = 'deferred'),"
        " count(distinct queue_id) filter (where counts_as = 'bounced') from raw.maillog"
    ).fetchone()
    assert messages == (delayed, failed) and delayed > 0 and failed > 0
    lines = gzip.decompress((SYSLOG_5424 / "maillog.gz").read_bytes()).decode().splitlines()
    head = re.compile(r"^<\d+>1 \S+ (\S+) exim (\d+) ")
    want = sorted(Counter(m.groups() for m in map(head.match, lines) if m).items())
    got = con.execute(
        "select host, cast(pid as varchar), count(*) from raw.maillog group by 1, 2 order by 1, 2"
    )
    assert [((h, p), n) for h, p, n in got.fetchall()] == want and len(want) > 1
    assert con.execute("select count(*) from raw.maillog where kind = 'other'").fetchone()[0] == 0


MAINLOG_494 = RECORDED / "exim-494-mainlog"


def test_exim_494_mainlog_with_indented_continuations_matches_eximstats(landing_con):
    """Exim 4.94 (Debian 11) writing its mainlog itself, with the two-line warnings of its start
    (` Suggested action: ...`, indented): the continuation lines are noise, never quarantined,
    and nothing is `other`; received and delivered per run and per minute, and the messages
    with a deferral or a failure, equal eximstats'; each failure's transport is its name, not
    `name:` (`** a@b R=r T=remote_smtp: all hosts ... have been failing`)."""
    path = MAINLOG_494 / "mainlog.gz"
    assert detect(FileSource(path, path.name)).format == "maillog"
    counts = land_file(landing_con, MaillogParser(), path, year=2026)
    lines = gzip.decompress(path.read_bytes()).decode().splitlines()
    indented = [ln for ln in lines if ln.startswith(" ")]
    assert len(indented) >= 2
    assert (counts.total, counts.noise, counts.quarantined) == (len(lines), len(indented), 0)
    assert_syslog_counts(landing_con, MAINLOG_494, eximstats(MAINLOG_494))
    con = landing_con
    assert con.execute("select count(*) from raw.maillog where kind = 'other'").fetchone()[0] == 0
    # `T=transport` as the line names it, up to a space or the colon before the error text
    want = Counter(m.group(1) for ln in lines if (m := re.search(r" T=([^\s:]+)", ln)))
    got = Counter(
        dict(
            con.execute(
                "select mailer, count(*) from raw.maillog where mailer is not null group by 1"
            ).fetchall()
        )
    )
    assert got == want and any(re.search(r" T=\S+: ", ln) for ln in lines)
    # an ACL `defer` answers 451 unless its message sets a code (smtp_in.c), a `deny` 550
    codes = dict(
        con.execute("select smtp_code, count(*) from raw.maillog where kind = 'reject' group by 1").fetchall()
    )
    temporary = sum(" temporarily rejected RCPT " in ln for ln in lines)
    assert (
        codes.get(451) == temporary > 0
        and codes.get(550) == sum(" rejected RCPT " in ln for ln in lines) - temporary
    )
