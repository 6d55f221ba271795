"""A recorded Postfix 3.10 run (tests/fixtures/recorded/postfix-310-postscreen-tls: postscreen,
STARTTLS, a header check, a connection rate limit) read by the project, checked against
pflogsumm's report on the same log and against regexes over its raw lines."""

from __future__ import annotations

import gzip
import re

from conftest import FIXTURES, land_file
from test_log_variants import TOTALS, pflogsumm_saved

from ingest.parsers.maillog import MaillogParser

RUN = FIXTURES / "recorded" / "postfix-310-postscreen-tls"
FID = 424310  # a file id of its own: the landing's parts folder may be shared
# cleanup's header check: `QID: reject: header Subject: ...; from=<s> to=<r> proto=ESMTP helo=<h>:
# 5.7.1 text`
HEADER_REJECT = re.compile(r" postfix/cleanup\[\d+\]: (\w+): reject: header .*>: (\d\.\d+\.\d+) (.*)$")


def _lines() -> list[str]:
    return gzip.decompress((RUN / "maillog.gz").read_bytes()).decode().splitlines()


def _landed(con) -> None:
    land_file(con, MaillogParser(), RUN / "maillog.gz", file_id=FID, year=2026)


def test_totals_and_warnings_equal_pflogsumm(landing_con):
    """Received, delivered, deferred, bounced and rejected (postscreen's, smtpd's and cleanup's)
    as pflogsumm counts them; smtpd's warnings as its Warnings section; no line `other`."""
    _landed(landing_con)
    counted = dict(
        landing_con.execute(
            f"select counts_as, count(*) from raw.maillog where file_id = {FID} and counts_as is not null"
            " group by 1"
        ).fetchall()
    )
    deferred = landing_con.execute(
        f"select count(distinct queue_id) from raw.maillog where file_id = {FID} and counts_as = 'deferred'"
    ).fetchone()[0]
    got = {k: counted.get(k, 0) for k in TOTALS} | {"deferred": deferred}
    assert got == pflogsumm_saved(RUN.name)
    report = (FIXTURES / "oracles" / RUN.name / "pflogsumm.txt").read_text()
    warnings = int(re.search(r"^  smtpd \(total: (\d+)\)$", report, re.M).group(1))
    got = landing_con.execute(
        f"select count(*) filter (where kind = 'warning' and program = 'postfix/smtpd'),"
        f" count(*) filter (where kind = 'other') from raw.maillog where file_id = {FID}"
    ).fetchone()
    assert got == (warnings, 0)


def test_a_header_check_refuses_the_message(landing_con):
    """Each cleanup reject has the line's enhanced code and text; its queue id's message ends
    `rejected` (Postfix 3.10 removes it: `removed (canceled)`), with no delivery; every other
    message was delivered."""
    _landed(landing_con)
    want = sorted(m.groups() for m in map(HEADER_REJECT.search, _lines()) if m)
    assert len(want) == 8
    got = landing_con.execute(
        f"""select queue_id, enhanced_code, reason from raw.maillog
            where file_id = {FID} and kind = 'reject' and program = 'postfix/cleanup' order by 1"""
    ).fetchall()
    assert got == want
    removed = [ln for ln in _lines() if re.search(r" postfix/cleanup\[\d+\]: \w+: removed \(canceled\)$", ln)]
    assert len(removed) == len(want)
    messages = f"from raw.maillog_messages where file_id = {FID} and has_lines = 1"
    statuses = dict(landing_con.execute(f"select final_status, count(*) {messages} group by 1").fetchall())
    assert set(statuses) == {"rejected", "sent"} and statuses["rejected"] == len(want)
    rejected = landing_con.execute(
        f"select queue_id, delivered_recipients {messages} and final_status = 'rejected' order by 1"
    ).fetchall()
    assert rejected == [(q, 0) for q, _, _ in want]
    delivered = landing_con.execute(f"select sum(delivered_recipients) {messages}").fetchone()[0]
    assert delivered == pflogsumm_saved(RUN.name)["delivered"]


MILTER = FIXTURES / "recorded" / "postfix-310-milter"
MILTER_REFUSAL = re.compile(
    r" postfix/cleanup\[\d+\]: (\w+): milter-reject: END-OF-MESSAGE from \S+: (\d\.\d+\.\d+) ([^;]*);"
)


def test_a_milters_refusals_and_the_queues_end(landing_con):
    """A recorded run with a milter, a relay that requires TLS, a recipient limit and
    `postsuper -d` (the fixture's README): the totals equal pflogsumm's; each end-of-data
    refusal is one the milter logged deciding, with the line's enhanced code and text, and its
    message ends `rejected`; the messages deleted with postsuper end `removed`; those still
    deferred are the queue's at the end; no line is `other`."""
    fid = 424340  # a file id of its own: the landing's parts folder may be shared
    land_file(landing_con, MaillogParser(), MILTER / "maillog.gz", file_id=fid, year=2026)
    con = landing_con
    rows = f"from raw.maillog where file_id = {fid}"
    counted = dict(
        con.execute(f"select counts_as, count(*) {rows} and counts_as is not null group by 1").fetchall()
    )
    deferred = con.execute(f"select count(distinct queue_id) {rows} and counts_as = 'deferred'").fetchone()[0]
    got = {k: counted.get(k, 0) for k in TOTALS} | {"deferred": deferred}
    assert got == pflogsumm_saved(MILTER.name)

    lines = gzip.decompress((MILTER / "maillog.gz").read_bytes()).decode().splitlines()
    want = sorted(m.groups() for m in map(MILTER_REFUSAL.search, lines) if m)
    decisions = (FIXTURES / "oracles" / MILTER.name / "milter.log").read_text().split()
    assert len(want) == decisions.count("reject") + decisions.count("tempfail") > 0
    got = con.execute(
        f"""select queue_id, enhanced_code, reason {rows}
            and kind = 'reject' and program = 'postfix/cleanup' order by 1"""
    ).fetchall()
    assert got == want

    messages = f"from raw.maillog_messages where file_id = {fid} and has_lines = 1"

    def final(status: str) -> list[str]:
        q = f"select list(queue_id order by queue_id) {messages} and final_status = '{status}'"
        return con.execute(q).fetchone()[0] or []

    assert final("rejected") == sorted({q for q, _, _ in want})
    deleted = [m[1] for t in lines if (m := re.search(r" postfix/postsuper\[\d+\]: (\w+): removed$", t))]
    assert final("removed") == sorted(deleted) and deleted
    queue = (FIXTURES / "oracles" / MILTER.name / "postqueue-at-end.txt").read_text()
    assert final("deferred") == sorted(re.findall(r"^([0-9A-F]{6,})\s+\d+ ", queue, re.M))
    assert con.execute(f"select count(*) {rows} and kind = 'other'").fetchone()[0] == 0
