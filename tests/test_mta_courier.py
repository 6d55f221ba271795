"""Recorded Courier runs (samples/mtas/courier-*, scripts/record/courier.sh) read through the
project, against counts taken from the raw syslog lines by regular expressions written here.

Courier logs a message's arrival as courierd's `newmsg,id=ID`, each delivery attempt as
`started,id=ID,...` and the module's outcome in the format of its libs/comctlfile.c
(`id=ID,from=<s>,addr=<a>,size=N,success: TEXT` or `...,status: success|failure|deferred`),
the end of a delivery pass as `completed,id=ID` (the message's, unless the pass deferred or
failed); courieresmtpd logs a refused command as
`error,relay=IP,port=N,from=<s>,to=<r>: 550 ...`.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from conftest import found, land_file

from ingest.detect import detect
from ingest.landing import ensure_schema, refresh_views
from ingest.parsers.maillog import MaillogParser
from ingest.source import FileSource

ROOT = Path(__file__).resolve().parents[1]
RUNS = found((ROOT / "samples" / "mtas").glob("courier-*"), "recorded Courier runs")

STAMP = r"(\d{4}-\d\d-\d\dT\d\d:\d\d):\d\d\.\d+\+00:00 \S+ "
DELIVERY = STAMP + r"courier\w+: id=[^,]+,from=<[^>]*>,addr=<[^>]*>(?:,size=\d+)?"
PATTERNS = {
    "received": re.compile(STAMP + r"courierd: newmsg,id=\S+: "),
    # the sample runs deliver locally, one line each (a relayed delivery logs both: RELAY below)
    "delivered": re.compile(DELIVERY + r"(?:,success: |,status: success$)"),
    "deferred": re.compile(DELIVERY + r",status: deferred$"),
    "bounced": re.compile(DELIVERY + r",status: failure$"),
    "rejected": re.compile(
        STAMP + r"courieresmtpd: error,relay=[^,]+,port=\d+,(?:from|to)=<[^>]*>.*: [45]\d\d "
    ),
}
COMPLETED = re.compile(STAMP + r"courierd: completed,id=")


def oracle(run: Path) -> tuple[Counter, Counter]:
    minutes: Counter = Counter()
    totals: Counter = Counter()
    for line in gzip.decompress((run / "maillog.gz").read_bytes()).decode().splitlines():
        for what, rx in PATTERNS.items():
            if m := rx.match(line):
                minutes[(datetime.fromisoformat(m[1]), what)] += 1
                totals[what] += 1
        totals["completed"] += bool(COMPLETED.match(line))
    return minutes, totals


@pytest.fixture(scope="module")
def landing():
    con = duckdb.connect()
    ensure_schema(con)
    for i, run in enumerate(RUNS):
        land_file(con, MaillogParser(), run / "maillog.gz", file_id=200 + i, year=2026)
    refresh_views(con)  # the Parquet-landed tables' views, as the ingest rebuilds them
    yield con
    con.close()


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_maillog_is_detected(run):
    assert detect(FileSource(run / "maillog.gz", "maillog.gz")).format == "maillog"


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_counts_per_run_and_minute(landing, run):
    fid = 200 + RUNS.index(run)
    minutes, totals = oracle(run)
    ours: Counter = Counter()
    rows = landing.execute(
        f"""select minute_at, received, delivered, deferred, bounced, rejected
            from raw.maillog_minutes where file_id = {fid}"""
    ).fetchall()
    for minute, *counts in rows:
        for what, n in zip(PATTERNS, counts, strict=True):
            if n:
                ours[(minute, what)] += n
    assert ours == minutes
    assert totals["received"] > 1000 and totals["delivered"] > 1000 and totals["rejected"] > 0


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_messages(landing, run):
    fid = 200 + RUNS.index(run)
    _, totals = oracle(run)
    n, with_sender, delivered, received, ended = landing.execute(
        f"""select count(*), count(sender), sum(delivered_recipients), count(received_at),
                   count(*) filter (where final_status = 'sent')
            from raw.maillog_messages where file_id = {fid}"""
    ).fetchone()
    assert n == received == totals["received"]
    assert with_sender == n
    assert delivered == totals["delivered"]
    assert ended == totals["completed"]


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_rejects_carry_the_code_the_client_got(landing, run):
    fid = 200 + RUNS.index(run)
    raw = gzip.decompress((run / "maillog.gz").read_bytes()).decode()
    codes = Counter(re.findall(r"courieresmtpd: error,relay=\S+?,to=<[^>]*>: (\d{3}) ", raw))
    ours = dict(
        landing.execute(
            f"""select smtp_code, count(*) from raw.maillog
                where file_id = {fid} and kind = 'reject' group by smtp_code"""
        ).fetchall()
    )
    assert ours == {int(c): n for c, n in codes.items()}


RELAY = ROOT / "tests" / "fixtures" / "recorded" / "courier-relay"


def test_relay_retries_and_bounces_match_the_sink(landing_con):
    """A recorded run relaying to an SMTP sink, with retries, bounces and expiry (the fixture's
    README): received equals the `newmsg` lines; delivered the local deliveries plus the
    messages the sink accepted (a relayed delivery's `success:` and `status: success` lines
    are one delivery); deferred and bounced the sink's 450s and 550s plus courierd's own
    refusals; each message is one message whatever its delivery passes; no Courier line of
    the MTA is `other`."""
    fid = 424320  # a file id of its own: the landing's parts folder may be shared
    land_file(landing_con, MaillogParser(), RELAY / "maillog.gz", file_id=fid, year=2026)
    lines = gzip.decompress((RELAY / "maillog.gz").read_bytes()).decode().splitlines()
    sink = gzip.decompress(
        (ROOT / "tests" / "fixtures" / "oracles" / RELAY.name / "sink.log.gz").read_bytes()
    )
    sink = [ln.split() for ln in sink.decode().splitlines()]
    replies = Counter(r[-1] for r in sink if r[1] == "RCPT")
    accepted = sum(1 for r in sink if r[1] == "DATA")
    local = sum(1 for t in lines if re.search(r" courierlocal: id=.*,success: ", t))
    refused = sum(
        1 for t in lines if re.search(r" courierd: id=[^,]+,from=<[^>]*>,addr=<[^>]*>,status: failure$", t)
    )
    ids = {m[1] for t in lines if (m := re.search(r" courierd: newmsg,id=([^:]+): ", t))}
    want = {
        "received": len(ids),
        "delivered": local + accepted,
        "deferred": replies["450"],
        "bounced": replies["550"] + refused,
        "rejected": sum(1 for t in lines if PATTERNS["rejected"].search(t)),
    }
    rows = f"from raw.maillog where file_id = {fid}"
    got = dict(
        landing_con.execute(
            f"select counts_as, count(*) {rows} and counts_as is not null group by 1"
        ).fetchall()
    )
    assert got == want and accepted > 0 and refused > 0
    messages = f"from raw.maillog_messages where file_id = {fid} and has_lines = 1"
    assert landing_con.execute(f"select count(*), count(distinct queue_id) {messages}").fetchone() == (
        len(ids),
        len(ids),
    )
    other = landing_con.execute(f"select count(*) {rows} and kind = 'other' and program like 'courier%'")
    other = other.fetchone()[0]
    assert other == 0
