"""Recorded notqmail runs (samples/mtas/qmail-*, scripts/record/qmail.sh) read through the
project, against counts taken from the raw multilog lines by regular expressions written
here, and the minutes of daemontools' own `tai64nlocal` (saved beside the oracle).

qmail-send numbers a delivery D only on `starting delivery D: msg N to ...`; the line that
ends it (`delivery D: success|deferral|failure`) names D alone, and D is reused. Messages
that qmail-send bounces itself are announced by `bounce msg N qp P` before their own
`info msg M: ... qp P`; they are not received mail.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from conftest import found, land_file, sink_record

from ingest.detect import detect
from ingest.landing import ensure_schema, refresh_views
from ingest.parsers.maillog import MaillogParser
from ingest.source import FileSource

ROOT = Path(__file__).resolve().parents[1]
RUNS = found((ROOT / "samples" / "mtas").glob("qmail-*"), "recorded qmail runs")
ORACLES = ROOT / "tests" / "fixtures" / "oracles"

INFO = re.compile(r"^info msg (\d+): bytes \d+ from <[^>]*> qp (\d+) ")
BOUNCE = re.compile(r"^bounce msg \d+ qp (\d+)$")
START = re.compile(r"^starting delivery (\d+): msg (\d+) to ")
DONE = re.compile(r"^delivery (\d+): (success|deferral|failure): ")
STATUS = {"success": "delivered", "deferral": "deferred", "failure": "bounced"}


def tai64nlocal_lines(run: Path) -> list[tuple[datetime, str]]:
    """(UTC time, text) per line of qmail-send's log, as daemontools' tai64nlocal printed it
    in the UTC chroot."""
    path = ORACLES / run.name / "qmail-send.tai64nlocal.txt.gz"
    out = []
    for line in gzip.decompress(path.read_bytes()).decode().splitlines():
        stamp, text = line[:29], line[30:]
        out.append((datetime.strptime(stamp[:26], "%Y-%m-%d %H:%M:%S.%f"), text))
    return out


def oracle(run: Path) -> tuple[Counter, Counter]:
    return count_lines(tai64nlocal_lines(run))


def count_lines(lines: list[tuple[datetime, str]]) -> tuple[Counter, Counter]:
    """Per minute and per run: received, delivered, deferred, bounced; and per message
    number the deliveries ended (the tie kept here by a dict of D -> N)."""
    minutes: Counter = Counter()
    totals: Counter = Counter()
    bounce_qps: set[str] = set()
    open_deliveries: dict[str, str] = {}
    for at, text in lines:
        minute = at.replace(second=0, microsecond=0)
        if m := BOUNCE.match(text):
            bounce_qps.add(m[1])
        elif m := INFO.match(text):
            if m[2] in bounce_qps:
                bounce_qps.discard(m[2])
            else:
                minutes[(minute, "received")] += 1
                totals["received"] += 1
        elif m := START.match(text):
            open_deliveries[m[1]] = m[2]
        elif m := DONE.match(text):
            what = STATUS[m[2]]
            minutes[(minute, what)] += 1
            totals[what] += 1
            totals["tied"] += m[1] in open_deliveries
            open_deliveries.pop(m[1], None)
        elif text.startswith("new msg "):
            totals["messages"] += 1
    return minutes, totals


@pytest.fixture(scope="module", params=RUNS, ids=lambda p: p.name)
def landed(request, landing_con):
    run = request.param
    con = landing_con
    fid = 100 + RUNS.index(run)
    land_file(con, MaillogParser(), run / "qmail-send.log.gz", file_id=fid, year=2026)
    land_file(con, MaillogParser(), run / "qmail-smtpd.log.gz", file_id=fid + 50, year=2026)
    refresh_views(con)  # the Parquet-landed tables' views, as the ingest rebuilds them
    return run, con, fid


@pytest.fixture(scope="module")
def landing_con():
    con = duckdb.connect()
    ensure_schema(con)
    yield con
    con.close()


def test_both_logs_are_maillogs():
    for run in RUNS:
        for name in ("qmail-send.log.gz", "qmail-smtpd.log.gz"):
            assert detect(FileSource(run / name, name)).format == "maillog", (run.name, name)


def test_stamps_are_tai64nlocal_times(landed):
    run, con, fid = landed
    ours = con.execute(
        f"select ts from raw.maillog where file_id = {fid} and ts_format = 'tai64n' order by line_no"
    ).fetchall()
    theirs = [at for at, _ in tai64nlocal_lines(run)]
    assert len(ours) == len(theirs)
    # tai64nlocal prints nanoseconds; ours are microseconds (truncated)
    assert [t for (t,) in ours] == theirs


def minute_counts(con, fid: int) -> Counter:
    """The landed counts per minute of file `fid`, keyed as the oracle's: (minute, what)."""
    got = con.execute(
        f"""select minute_at, received, delivered, deferred, bounced, rejected
            from raw.maillog_minutes where file_id = {fid}"""
    ).fetchall()
    ours: Counter = Counter()
    for minute, *counts in got:
        for what, n in zip(("received", "delivered", "deferred", "bounced", "rejected"), counts, strict=True):
            if n:
                ours[(minute, what)] += n
    return ours


def test_counts_per_run_and_minute(landed):
    run, con, fid = landed
    minutes, totals = oracle(run)
    assert minute_counts(con, fid) == minutes
    assert totals["received"] > 1000 and totals["delivered"] > 1000 and totals["bounced"] > 0


def assert_messages_tie(con, fid: int, totals: Counter) -> None:
    """The landed messages of file `fid` against the raw lines' counts: as many messages,
    their recipients delivered and bounced, every result tied to its start, none still
    queued (every message of a drained run ended, `end msg N`, after its last delivery)."""
    n, delivered, bounced, queued = con.execute(
        f"""select count(*), sum(delivered_recipients), sum(bounced_recipients),
                   count(*) filter (where final_status = 'queued')
            from raw.maillog_messages where file_id = {fid}"""
    ).fetchone()
    assert n == totals["messages"]
    assert (delivered, bounced) == (totals["delivered"], totals["bounced"])
    assert totals["tied"] == totals["delivered"] + totals["deferred"] + totals["bounced"]
    assert queued == 0


def test_messages_tie_their_deliveries(landed):
    run, con, fid = landed
    _, totals = oracle(run)
    assert_messages_tie(con, fid, totals)


def test_smtpd_log_counts_connections(landed):
    run, con, fid = landed
    raw = gzip.decompress((run / "qmail-smtpd.log.gz").read_bytes()).decode().splitlines()
    pids = Counter(m[1] for ln in raw if (m := re.search(r" tcpserver: (pid|end|status:) ", ln)))
    kinds = dict(
        con.execute(
            f"select kind, count(*) from raw.maillog where file_id = {fid + 50} group by kind"
        ).fetchall()
    )
    assert kinds.get("connect") == pids["pid"]
    assert kinds.get("disconnect") == pids["end"]
    assert kinds.get("status") == pids["status:"]


BOUNCES = ROOT / "tests" / "fixtures" / "recorded" / "qmail-bounces"


def test_failures_deferrals_and_discarded_bounces(landing_con):
    """A recorded run whose local and remote deliveries failed and deferred until the queue
    lifetime ran out, and whose bounces to unroutable senders were discarded (the fixture's
    README): each outcome as the raw lines count it; each discarded bounce a warning; no line
    left as `other`."""
    log = BOUNCES / "qmail-send.log.gz"
    fid = 424242  # a file id of its own: the landing's parts folder is shared
    land_file(landing_con, MaillogParser(), log, file_id=fid, year=2026)
    lines = gzip.decompress(log.read_bytes()).decode().splitlines()
    result = re.compile(r" delivery \d+: (success|failure|deferral):")
    outcome = Counter(m[1] for m in map(result.search, lines) if m)
    by_status = (
        f"select status, count(*) from raw.maillog where file_id = {fid} and kind = 'delivery' group by 1"
    )
    got = dict(landing_con.execute(by_status).fetchall())
    assert got == {"sent": outcome["success"], "bounced": outcome["failure"], "deferred": outcome["deferral"]}
    discarded = [t.split(" ", 1)[1] for t in lines if " triple bounce: discarding " in t]
    warnings = landing_con.execute(
        f"select detail from raw.maillog where file_id = {fid} and kind = 'warning' order by line_no"
    )
    assert discarded and [d for (d,) in warnings.fetchall()] == discarded
    other = f"select count(*) from raw.maillog where file_id = {fid} and kind = 'other'"
    assert landing_con.execute(other).fetchone()[0] == 0


# a result line's report (qmail-send's log: spaces as `_`, the report's lines joined by `/`)
START_TO = re.compile(r" starting delivery (\d+): msg \d+ to (local|remote) (\S+)$")
RESULT = re.compile(r" delivery (\d+): (success|deferral|failure): (.*)$")
OWN_CODE = re.compile(r"\(#(\d\.\d{1,3}\.\d{1,3})\)")
REPLY = re.compile(r"Remote_host_said:_([2-5]\d\d)[-_](?:(\d\.\d{1,3}\.\d{1,3})(?=[_/]|$))?")
# qmail-remote's report names the host it spoke to (qmail-remote.c)
REMOTE_HOST = re.compile(
    r"^(?:Connected_to_)?(\d+\.\d+\.\d+\.\d+)(?:_accepted_message\.|_does_not_like_recipient\."
    r"|_failed_on_DATA_command\.|_failed_after_I_sent_the_message\.|_but_)"
)


def results_from_raw_lines(path: Path) -> list[tuple]:
    """Per `delivery D:` result line: (line number, outcome, recipient and mailer of the
    open `starting delivery D` line, dsn, smtp code, the remote host's address). D is open from
    its start line to its result; the dsn is qmail's `(#X.Y.Z)`, else the remote reply's
    enhanced code."""
    open_starts: dict[str, tuple[str, str]] = {}
    out = []
    for n, line in enumerate(gzip.decompress(path.read_bytes()).decode().splitlines(), start=1):
        if m := START_TO.search(line):
            open_starts[m[1]] = (m[3], m[2])
        elif m := RESULT.search(line):
            rcpt, mailer = open_starts.pop(m[1], (None, None))
            own, reply, host = OWN_CODE.search(m[3]), REPLY.search(m[3]), REMOTE_HOST.match(m[3])
            dsn = own[1] if own else reply[2] if reply else None
            out.append((n, m[2], rcpt, mailer, dsn, int(reply[1]) if reply else None, host and host[1]))
    return out


SPLOGGER = ROOT / "tests" / "fixtures" / "recorded" / "qmail-splogger"
REMOTE_SINK = ROOT / "tests" / "fixtures" / "recorded" / "qmail-remote-sink"
SEND_LOGS = [run / "qmail-send.log.gz" for run in RUNS] + [
    BOUNCES / "qmail-send.log.gz",
    SPLOGGER / "maillog.gz",
    REMOTE_SINK / "qmail-send.log.gz",
]


@pytest.mark.parametrize("log", SEND_LOGS, ids=lambda p: p.parent.name)
def test_delivery_results_carry_recipient_mailer_and_codes(landing_con, log):
    """Each result row takes the recipient and mailer of its delivery's start line, qmail's
    `(#X.Y.Z)` as its dsn and a remote reply's code as its smtp_code: row for row, as the raw
    lines give them."""
    want = results_from_raw_lines(log)
    fid = 424300 + SEND_LOGS.index(log)  # a file id of its own
    land_file(landing_con, MaillogParser(), log, file_id=fid, year=2026)
    outcome = {"sent": "success", "deferred": "deferral", "bounced": "failure"}
    got = [
        (n, outcome[status], rcpt, mailer, dsn, code, ip)
        for n, status, rcpt, mailer, dsn, code, ip in landing_con.execute(
            f"""select line_no, status, recipient, mailer, dsn, smtp_code, relay_ip from raw.maillog
                where file_id = {fid} and kind = 'delivery' order by line_no"""
        ).fetchall()
    ]
    assert got == want
    outcomes = Counter(w[1] for w in want)
    assert outcomes["failure"] > 0 and outcomes["success"] > 0
    assert all(w[2] is not None for w in want), "every result's delivery started in the log"
    assert any(w[4] for w in want if w[1] == "failure")


# qmail through splogger and syslog: `Nov 28 00:24:56 vm qmail: 1795825496.100770 new msg N`
SPLOGGED = re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ ([^\s\[:]+): (\d+)\.(\d{6})([ +])(.*)$")


def splogger_lines(path: Path, tag: str) -> list[tuple[datetime, str]]:
    """(UTC time of splogger's stamp, text) per line that splogger logged under `tag`."""
    out = []
    for line in gzip.decompress(path.read_bytes()).decode().splitlines():
        m = SPLOGGED.match(line)
        assert m and m[4] == " ", line  # every line is splogger's, none folded
        if m[1] == tag:
            at = datetime.fromtimestamp(int(m[2]), UTC).replace(tzinfo=None, microsecond=int(m[3]))
            out.append((at, m[5]))
    return out


@pytest.fixture(scope="module")
def splogged(landing_con):
    fid = 424600
    land_file(landing_con, MaillogParser(), SPLOGGER / "maillog.gz", file_id=fid, year=2026)
    refresh_views(landing_con)
    return landing_con, fid


def test_splogger_log_is_a_maillog():
    path = SPLOGGER / "maillog.gz"
    assert detect(FileSource(path, path.name)).format == "maillog"


def test_splogger_counts_per_run_and_minute(splogged):
    """qmail-send's lines through splogger (the fixture's README): received, delivered,
    deferred and bounced per minute of splogger's stamp equal the raw lines' counts; every
    line's time is splogger's stamp; none is left as `other`."""
    con, fid = splogged
    lines = splogger_lines(SPLOGGER / "maillog.gz", "qmail")
    minutes, totals = count_lines(lines)
    assert minute_counts(con, fid) == minutes
    assert totals["received"] > 300 and totals["deferred"] > 0 and totals["bounced"] > 0
    stamps = con.execute(
        f"select ts from raw.maillog where file_id = {fid} and program = 'qmail' order by line_no"
    ).fetchall()
    assert [t for (t,) in stamps] == [at for at, _ in lines]
    other = f"select count(*) from raw.maillog where file_id = {fid} and kind = 'other' and program = 'qmail'"
    assert con.execute(other).fetchone()[0] == 0


def test_splogger_messages_tie_their_deliveries(splogged):
    con, fid = splogged
    _, totals = count_lines(splogger_lines(SPLOGGER / "maillog.gz", "qmail"))
    assert_messages_tie(con, fid, totals)
    untied = f"select count(*) from raw.maillog where file_id = {fid} and kind = 'delivery'"
    assert con.execute(untied + " and queue_id is null").fetchone()[0] == 0


def test_splogger_tcpserver_lines_are_connections(splogged):
    """tcpserver's lines through `splogger smtpd`: one connect per `pid P from`, one
    disconnect per `end P status S`, one status per `status:`, with the client's address."""
    con, fid = splogged
    raw = [t for _, t in splogger_lines(SPLOGGER / "maillog.gz", "smtpd")]
    want = Counter(m[1] for t in raw if (m := re.match(r"tcpserver: (pid|end|status:) ", t)))
    of = f"from raw.maillog where file_id = {fid} and program = 'tcpserver'"
    kinds = dict(con.execute(f"select kind, count(*) {of} group by 1").fetchall())
    assert (kinds["connect"], kinds["disconnect"]) == (want["pid"], want["end"])
    assert kinds["status"] == want["status:"]
    # tcpserver's `ok P local remote` after each `pid P from`: the client let in, and its port
    assert kinds["accepted"] == want["pid"]
    clients = con.execute(f"select distinct client {of} and kind = 'connect'").fetchall()
    ports = con.execute(f"select distinct client_ip, client_port is not null {of} and kind = 'accepted'")
    assert clients == [("127.0.0.1",)] and ports.fetchall() == [("127.0.0.1", True)]


def test_splogger_remote_results_match_the_sink(splogged):
    """qmail-remote's results for sink.test carry the reply the SMTP sink recorded giving:
    each 250, 450 and 550 to RCPT, and one accepted message per success."""
    con, fid = splogged
    sink = sink_record(SPLOGGER.name)
    replies = Counter(int(r[3]) for r in sink if r[1] == "RCPT")
    got = dict(
        con.execute(
            f"""select smtp_code, count(*) from raw.maillog where file_id = {fid} and kind = 'delivery'
                and recipient like '%@sink.test' group by 1"""
        ).fetchall()
    )
    assert got == dict(replies) and set(got) == {250, 450, 550}
    sent = con.execute(
        f"""select count(*) from raw.maillog where file_id = {fid} and kind = 'delivery' and status = 'sent'
            and mailer = 'remote'"""
    ).fetchone()[0]
    assert sent == sum(1 for r in sink if r[1] == "DATA")


def test_remote_deliveries_against_qmailanalog_and_the_sink(landing_con):
    """A run relaying to an SMTP sink that defers and refuses, with a queue lifetime short
    enough that messages expire within it (the fixture's README): the completed messages and
    the delivery attempts by result are qmailanalog's (`matchup | zoverall`); the remote
    results' reply codes are those the sink recorded giving; tcpserver's connections name their
    client; no line is `other`."""
    send, smtpd = REMOTE_SINK / "qmail-send.log.gz", REMOTE_SINK / "qmail-smtpd.log.gz"
    fid, sfid = 424360, 424361  # file ids of their own: the landing's parts folder is shared
    land_file(landing_con, MaillogParser(), send, file_id=fid, year=2026)
    land_file(landing_con, MaillogParser(), smtpd, file_id=sfid, year=2026)
    con = landing_con
    zoverall = (ORACLES / REMOTE_SINK.name / "zoverall.txt").read_text()

    def z(label: str) -> int:
        return int(re.search(rf"^\s*{label}:? (\d+)$", zoverall, re.M)[1])

    by_status = dict(
        con.execute(
            f"select status, count(*) from raw.maillog where file_id = {fid} and kind = 'delivery' group by 1"
        ).fetchall()
    )
    assert by_status == {"sent": z("success"), "bounced": z("failure"), "deferred": z("deferral")}
    completed = con.execute(
        f"select count(*) from raw.maillog_messages where file_id = {fid} and has_lines = 1"
    ).fetchone()[0]
    assert completed == z("Completed messages")

    sink = Counter(f[3] for f in sink_record(REMOTE_SINK.name) if f[1] == "RCPT")
    sink.update(f[3] for f in sink_record(REMOTE_SINK.name) if f[1] == "DATA" and f[3] != "250")
    codes = Counter(
        dict(
            con.execute(
                f"""select cast(smtp_code as varchar), count(*) from raw.maillog
                    where file_id = {fid} and kind = 'delivery' and smtp_code is not null group by 1"""
            ).fetchall()
        )
    )
    # a 250 to RCPT is followed by the message's own 250 (one result); refusals end the recipient
    assert codes == Counter({k: v for k, v in sink.items() if k != "250"}) + Counter(
        {"250": sum(1 for f in sink_record(REMOTE_SINK.name) if f[1] == "DATA" and f[3] == "250")}
    )

    # a bounce's own `info msg N: ... qp P` names the message `bounce msg M qp P` returns
    sent = gzip.decompress(send.read_bytes()).decode().splitlines()
    returned, want = {}, []
    for t in sent:
        if m := re.search(r" bounce msg (\d+) qp (\d+)$", t):
            returned[m[2]] = m[1]
        elif (m := re.search(r" info msg (\d+): bytes \d+ from <[^>]*> qp (\d+) ", t)) and m[2] in returned:
            want.append((m[1], returned.pop(m[2])))
    got = con.execute(
        f"""select queue_id, related_queue_id from raw.maillog
            where file_id = {fid} and kind = 'from' and related_queue_id is not null order by line_no"""
    ).fetchall()
    assert want and got == want

    lines = gzip.decompress(smtpd.read_bytes()).decode().splitlines()
    pids = [m[1] for t in lines if (m := re.search(r" tcpserver: pid \d+ from (\S+)$", t))]
    got = con.execute(
        f"select client_ip from raw.maillog where file_id = {sfid} and kind = 'connect' order by line_no"
    ).fetchall()
    assert pids and [ip for (ip,) in got] == pids
    other = f"select count(*) from raw.maillog where file_id in ({fid}, {sfid}) and kind = 'other'"
    assert con.execute(other).fetchone()[0] == 0
