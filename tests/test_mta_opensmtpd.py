"""Recorded OpenSMTPD runs read by the project: 6.8 (Debian 12, samples/mtas/opensmtpd-*) and 7.6
(Debian 13, tests/fixtures/recorded/opensmtpd-7-maildir). OpenSMTPD ships no log summarizer:
the oracle is the raw maillog counted here with regular expressions, and postal's own error
lines."""

from __future__ import annotations

import gzip
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import FIXTURES, found, land_file

from ingest.detect import detect
from ingest.parsers.maillog import MaillogParser
from ingest.source import FileSource

ROOT = Path(__file__).resolve().parents[1]
RUNS = found(
    sorted((ROOT / "samples" / "mtas").glob("opensmtpd-*"))
    # postal alone loaded these (the relay run's hand sessions are refused too: RELAY below)
    + sorted((FIXTURES / "recorded").glob("opensmtpd-*-maildir")),
    "OpenSMTPD runs",
)

LINE = re.compile(r"^\S+T(\d\d:\d\d):\S+ \S+ smtpd\[\d+\]: [0-9a-f]{16} (.*)$")
# what each count is, as the raw lines say it
RAW = {
    "received": re.compile(r"^smtp message msgid=[0-9a-f]{8} "),
    "delivered": re.compile(r"^m[dt]a delivery .* result=\"?Ok\"? "),
    "deferred": re.compile(r"^m[dt]a delivery .* result=\"?TempFail\"? "),
    "bounced": re.compile(r"^m[dt]a delivery .* result=\"?PermFail\"? "),
    "rejected": re.compile(r'^smtp failed-command .* result="[45]\d\d '),
}
# the project's counting (the parser's counts_as, read by int_maillog__lines): arrivals, deliveries by
# status, kind reject
COUNTED = {
    "received": "kind = 'arrival'",
    "delivered": "kind = 'delivery' and status = 'sent'",
    "deferred": "kind = 'delivery' and status = 'deferred'",
    "bounced": "kind = 'delivery' and status = 'bounced'",
    "rejected": "kind = 'reject'",
}


def postal_output(run: Path) -> Path:
    """A sample run keeps postal.csv beside its log; a recorded fixture in its oracle folder."""
    own = run / "postal.csv"
    return own if own.exists() else FIXTURES / "oracles" / run.name / "postal.csv"


def raw_lines(run: Path) -> list[re.Match]:
    text = gzip.decompress((run / "maillog.gz").read_bytes()).decode()
    return [m for ln in text.splitlines() if (m := LINE.match(ln))]


@pytest.fixture
def landed(landing_con):
    def land(run: Path):
        land_file(landing_con, MaillogParser(), run / "maillog.gz", year=2026)
        return landing_con

    return land


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_detected_as_a_maillog(run):
    path = run / "maillog.gz"
    assert detect(FileSource(path, path.name)).format == "maillog"


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_per_minute_counts_match_the_raw_lines(landed, run):
    lines = raw_lines(run)
    con = landed(run)
    for key, where in COUNTED.items():
        want = Counter(m[1] for m in lines if RAW[key].search(m[2]))
        got = con.execute(f"select strftime(ts, '%H:%M'), count(*) from raw.maillog where {where} group by 1")
        assert Counter(dict(got.fetchall())) == want, key
    assert con.execute("select count(*) from raw.maillog where kind = 'arrival'").fetchone()[0] > 0


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_deliveries_belong_to_their_message(landed, run):
    # an envelope id's first 8 hex digits are its message id
    lines = raw_lines(run)
    msgids = {re.search(r"msgid=(\w+)", m[2])[1] for m in lines if RAW["received"].search(m[2])}
    delivered = Counter(re.search(r"evpid=(\w{8})", m[2])[1] for m in lines if RAW["delivered"].search(m[2]))
    con = landed(run)
    got = con.execute(
        "select queue_id, count(*) filter (where kind = 'delivery' and status = 'sent'),"
        " count(*) filter (where kind = 'arrival') from raw.maillog where queue_id is not null group by 1"
    ).fetchall()
    assert {q for q, _, n in got if n} == msgids
    assert Counter({q: n for q, n, _ in got if n}) == delivered


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_refused_recipients_are_the_clients_errors(landed, run):
    postal = postal_output(run).read_text().splitlines()
    refused = Counter(m[1] for ln in postal if (m := re.match(r"Server error:5\d\d \S+ .*<([^>]+)>$", ln)))
    con = landed(run)
    got = con.execute(
        "select recipient, reject_stage, smtp_code, count(*) from raw.maillog"
        " where kind = 'reject' group by all"
    ).fetchall()
    assert {(stage, code) for _, stage, code, _ in got} == {("RCPT", 524)}
    assert Counter({to: n for to, *_, n in got}) == refused


RELAY = FIXTURES / "recorded" / "opensmtpd-7-relay"


def test_relay_replies_removals_and_what_is_left_queued(landing_con):
    """A recorded 7.6 run relaying to an SMTP sink, with `smtpctl remove` (the fixture's README):
    each count equals the raw lines'; the relayed deliveries equal the sink's 250s, 450s and
    550s and carry its reply code; the messages still deferred at the end are the queue's;
    each removed envelope is a delivery `removed`; no smtpd line is `other`."""
    fid = 424330  # a file id of its own: the landing's parts folder may be shared
    land_file(landing_con, MaillogParser(), RELAY / "maillog.gz", file_id=fid, year=2026)
    con = landing_con
    lines = raw_lines(RELAY)
    rows = f"from raw.maillog where file_id = {fid}"
    for key, where in COUNTED.items():
        n = con.execute(f"select count(*) {rows} and {where}").fetchone()[0]
        assert n == sum(1 for m in lines if RAW[key].search(m[2])), key
    sink = gzip.decompress((FIXTURES / "oracles" / RELAY.name / "sink.log.gz").read_bytes()).decode()
    replies = Counter(int(r.split()[-1]) for r in sink.splitlines() if r.split()[1] == "RCPT")
    got = Counter(
        dict(
            con.execute(
                f"select smtp_code, count(*) {rows} and kind = 'delivery' and mailer = 'mta' group by 1"
            ).fetchall()
        )
    )
    assert got == replies and set(replies) == {250, 450, 550}
    queue = (FIXTURES / "oracles" / RELAY.name / "queue-at-end.txt").read_text().splitlines()
    left = {ln.split("|")[0][:8] for ln in queue}
    deferred = con.execute(
        f"select list(queue_id order by queue_id) from raw.maillog_messages"
        f" where file_id = {fid} and has_lines = 1 and final_status = 'deferred'"
    ).fetchone()[0]
    assert deferred == sorted(left)
    text = gzip.decompress((RELAY / "maillog.gz").read_bytes()).decode()
    removed = re.findall(r" relay: Remove for ([0-9a-f]{8})[0-9a-f]{8}: ", text)
    got = con.execute(f"select list(queue_id order by line_no) {rows} and status = 'removed'").fetchone()[0]
    assert got == removed and removed
    assert con.execute(f"select count(*) {rows} and kind = 'other'").fetchone()[0] == 0


EXPIRE = FIXTURES / "recorded" / "opensmtpd-68-expire"


def test_expired_envelopes_routes_and_an_empty_queue(landing_con):
    """A recorded 6.8 run whose relayed envelopes expire (`queue ttl 3m`, the fixture's README):
    each `relay: Expire for` line is a delivery counted `expired`, and every message it names
    ends `expired`; the queue was empty at the end, so no message ends deferred; the relay's
    route notices and connection errors are read (nothing is `other`); `rcpt=<->` names no
    original recipient."""
    fid = 424331
    land_file(landing_con, MaillogParser(), EXPIRE / "maillog.gz", file_id=fid, year=2026)
    con = landing_con
    rows = f"from raw.maillog where file_id = {fid}"
    text = gzip.decompress((EXPIRE / "maillog.gz").read_bytes()).decode()
    expired = re.findall(
        r" relay: Expire for ([0-9a-f]{8})[0-9a-f]{8}: .*, stat=Envelope expired$", text, re.M
    )
    assert len(expired) >= 100
    got = con.execute(f"select count(*) {rows} and counts_as = 'expired'").fetchone()[0]
    assert got == len(expired)
    ends = dict(
        con.execute(
            f"select final_status, count(*) from raw.maillog_messages where file_id = {fid}"
            f" and queue_id in (select unnest(?)) group by 1",
            [sorted(set(expired))],
        ).fetchall()
    )
    assert ends == {"expired": len(set(expired))}
    assert (EXPIRE.parent.parent / "oracles" / EXPIRE.name / "queue-at-end.txt").read_text() == ""
    deferred = con.execute(
        f"select count(*) from raw.maillog_messages where file_id = {fid} and has_lines = 1"
        " and final_status = 'deferred'"
    ).fetchone()[0]
    assert deferred == 0
    routes = len(re.findall(r" smtp-out: (?:Enabling|Disabling) route ", text))
    refused = len(re.findall(r" mta error reason=", text))
    kinds = dict(con.execute(f"select kind, count(*) {rows} group by 1").fetchall())
    assert (kinds.get("route"), kinds.get("connect_error"), kinds.get("other", 0)) == (routes, refused, 0)
    assert routes and refused
    assert con.execute(f"select count(*) {rows} and orig_to = '-'").fetchone()[0] == 0
