"""A recorded Postfix 3.10 run (tests/fixtures/recorded/postfix-310-postscreen-tls: postscreen,
STARTTLS, a header check, a connection rate limit) read by the project, checked against
pflogsumm's report on the same log and against regexes over its raw lines."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import subprocess
import sys
from collections import Counter

import duckdb
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
    fid = 424340
    con = landing_con
    rows = assert_landed_totals_equal_pflogsumm(con, MILTER, fid)

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


def assert_landed_totals_equal_pflogsumm(con, run, fid: int) -> str:
    """Land `run`'s maillog.gz as file `fid` (an id of its own: the landing's parts folder may
    be shared); its totals as pflogsumm counts them (deferred: messages) equal pflogsumm's
    saved report. Returns the SQL `from` clause of the file's rows."""
    from ingest.parsers.maillog import MaillogParser

    land_file(con, MaillogParser(), run / "maillog.gz", file_id=fid, year=2026)
    rows = f"from raw.maillog where file_id = {fid}"
    counted = dict(
        con.execute(f"select counts_as, count(*) {rows} and counts_as is not null group by 1").fetchall()
    )
    deferred = con.execute(f"select count(distinct queue_id) {rows} and counts_as = 'deferred'").fetchone()[0]
    got = {k: counted.get(k, 0) for k in TOTALS} | {"deferred": deferred}
    assert got == pflogsumm_saved(run.name)
    return rows


LMTP_DOVECOT = FIXTURES / "recorded" / "postfix-310-lmtp-dovecot24"


def test_lmtp_to_dovecot_with_its_own_log_file(landing_con):
    """Postfix with long queue ids delivering over LMTP to Dovecot 2.4, which logs to a file of
    its own (no host, no tag, a level after each prefix; the fixture's README): the maillog's
    totals equal pflogsumm's; the Dovecot log is recognised as a mail log, no line of it is
    `other`, and its saves, failed saves, logins, failed logins and logouts are as many as the
    raw lines say."""
    from ingest.parsers.maillog import MaillogParser as Parser

    con = landing_con
    fid, dfid = 424350, 424351  # file ids of their own: the landing's parts folder may be shared
    assert_landed_totals_equal_pflogsumm(con, LMTP_DOVECOT, fid)

    raw = gzip.decompress((LMTP_DOVECOT / "dovecot.log.gz").read_bytes()).decode()
    assert Parser().sniff(raw[:20000], "dovecot.log") >= 95
    counts = land_file(con, Parser(), LMTP_DOVECOT / "dovecot.log.gz", file_id=dfid, year=2026)
    lines = raw.splitlines()
    assert counts.total == len(lines) == counts.parsed
    kinds = dict(
        con.execute(f"select kind, count(*) from raw.maillog where file_id = {dfid} group by 1").fetchall()
    )
    assert "other" not in kinds, kinds
    assert (
        con.execute(
            f"select count(*) from raw.maillog where file_id = {dfid} and program <> 'dovecot'"
        ).fetchone()[0]
        == 0
    )

    def n(pattern: str) -> int:
        return sum(1 for t in lines if re.search(pattern, t))

    want = {
        "local_delivery": n(r"^\S+ +\d+ \S+ lmtp\([^)]*\)<\d+><[^>]+>: Info: msgid=.*: saved mail to "),
        "local_delivery_failed": n(r": Info: msgid=.*: save failed to "),
        "mailbox_login": n(r" (?:pop3|imap)-login: Info: Logged in: "),
        "mailbox_auth_failed": n(r" (?:pop3|imap)-login: Info: Login aborted: .*\(auth failed"),
        "mailbox_logout": n(r" (?:pop3|imap)\([^)]+\)<\d+><[^>]+>: Info: (?:Disconnected: )?Logged out"),
    }
    assert all(want.values()), want
    assert {k: kinds.get(k, 0) for k in want} == want
    users = con.execute(
        f"""select count(*) from raw.maillog where file_id = {dfid}
            and kind = 'local_delivery' and mailbox_user like '%@bench.test'"""
    ).fetchone()[0]
    assert users == want["local_delivery"]


MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]
RFC5424_UNNAMED = FIXTURES / "recorded" / "postfix-310-rfc5424-unnamed"
CHECKS_SOFTBOUNCE = FIXTURES / "recorded" / "postfix-310-checks-softbounce"


def test_rfc_5424_lines_without_the_daemons_name(landing_con):
    """rsyslog's default RFC 5424 template names every line's program `postfix` alone (the
    fixture's README): received, delivered, deferred, bounced and rejected equal regexes over
    the raw lines, read by the lines' shapes; every access WARN is a `warn`; no line is
    `other`."""
    fid = 424390  # a file id of its own: the landing's parts folder may be shared
    land_file(landing_con, MaillogParser(), RFC5424_UNNAMED / "maillog.gz", file_id=fid, year=2026)
    lines = gzip.decompress((RFC5424_UNNAMED / "maillog.gz").read_bytes()).decode().splitlines()
    assert all(re.match(r"^<\d+>1 \S+ \S+ postfix \d+ ", t) for t in lines)

    def n(pattern: str) -> int:
        return sum(1 for t in lines if re.search(pattern, t))

    want = {
        "received": n(r"  [0-9A-Za-z]+: client="),
        "delivered": n(r", status=sent "),
        "deferred": n(r", status=deferred "),
        "bounced": n(r", status=bounced "),
        "rejected": n(r"  NOQUEUE: reject: RCPT from "),
    }
    assert all(want.values()), want
    got = dict(
        landing_con.execute(
            f"""select counts_as, count(*) from raw.maillog
                where file_id = {fid} and counts_as is not null group by 1"""
        ).fetchall()
    )
    assert got == want
    kinds = dict(
        landing_con.execute(
            f"select kind, count(*) from raw.maillog where file_id = {fid} group by 1"
        ).fetchall()
    )
    assert kinds.get("warn") == n(r"  NOQUEUE: warn: RCPT from ") > 0
    assert "other" not in kinds


def test_checks_soft_bounce_and_a_rotated_log(tmp_path):
    """A run with header/body check actions, soft_bounce and a log rotated mid-run (the
    fixture's README), ingested as a run: received, delivered, bounced and rejected equal
    pflogsumm's on the two files; deferrals are pflogsumm's plus the `status=SOFTBOUNCE` lines
    it does not read; held lines are its held, and the discarded messages end `discarded`."""
    run = tmp_path / "archive" / "checks"
    run.mkdir(parents=True)
    for name in ("maillog.1.gz", "maillog.gz"):
        shutil.copy(CHECKS_SOFTBOUNCE / name, run / name)
    data = tmp_path / "data"
    env = dict(os.environ, MTABENCH_DATA=str(data))
    subprocess.run([*MTABENCH, "ingest", str(run.parent)], env=env, check=True, capture_output=True)
    text = (FIXTURES / "oracles" / CHECKS_SOFTBOUNCE.name / "pflogsumm.txt").read_text()

    def p(label: str) -> int:
        return int(re.search(rf"^\s*(\d+)\s+{label}\b", text, re.M)[1])

    lines = [
        t
        for name in ("maillog.1.gz", "maillog.gz")
        for t in gzip.decompress((CHECKS_SOFTBOUNCE / name).read_bytes()).decode().splitlines()
    ]
    soft = sum(1 for t in lines if ", status=SOFTBOUNCE " in t)
    deferrals = int(re.search(r"deferred\s+\((\d+)\s+deferrals\)", text)[1])
    con = duckdb.connect(str(data / "mtabench.duckdb"), read_only=True)
    got = con.execute(
        """select sum(received), sum(delivered), sum(deferred), sum(bounced), sum(rejected)
           from raw.maillog_minutes"""
    ).fetchone()
    assert soft > 0 and got == (p("received"), p("delivered"), deferrals + soft, p("bounced"), p("rejected"))
    kinds = dict(con.execute("select kind, count(*) from raw.maillog group by 1").fetchall())
    assert kinds.get("hold") == p("held") > 0
    final = dict(
        con.execute(
            "select final_status, count(*) from raw.maillog_messages where has_lines = 1 group by 1"
        ).fetchall()
    )
    assert (
        final.get("discarded")
        == p("discarded")
        == sum(1 for t in lines if t.endswith(": removed (discarded)"))
    )
    assert "other" not in kinds


MAILLOG_FILE_35 = FIXTURES / "recorded" / "postfix-35-maillog-file"


def test_postfix_35_maillog_file_equals_pflogsumm(landing_con):
    """Postfix 3.5 (Debian 11) writing its own log through postlogd, with refusals, bounces,
    deferrals to a closed port and their expiry (the fixture's README): the totals equal
    pflogsumm's; received per minute, and the expired messages, are as many as the raw lines
    say; no line is `other`."""

    con = landing_con
    fid = 424352
    rows = assert_landed_totals_equal_pflogsumm(con, MAILLOG_FILE_35, fid)
    lines = gzip.decompress((MAILLOG_FILE_35 / "maillog.gz").read_bytes()).decode().splitlines()
    client = re.compile(r"^\w{3} \d\d (\d\d:\d\d):\d\d \S+ postfix/smtpd\[\d+\]: \w+: client=")
    want = Counter(m.group(1) for ln in lines if (m := client.match(ln)))
    per_min = f"select strftime(ts, '%H:%M'), count(*) {rows} and counts_as = 'received' group by 1"
    assert dict(con.execute(per_min).fetchall()) == want
    expired = {m.group(1) for ln in lines if (m := re.search(r" (\w+): from=<[^>]*>, status=expired, ", ln))}
    ends = con.execute(
        f"select count(*) from raw.maillog_messages where file_id = {fid} and final_status = 'expired'"
    ).fetchone()[0]
    assert ends == len(expired) > 0
    assert con.execute(f"select count(*) {rows} and kind = 'other'").fetchone()[0] == 0
