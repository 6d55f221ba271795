"""MaillogParser against real sample logs, pflogsumm as the independent reference."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from conftest import found, land_file

from ingest.parsers.base import ParseContext
from ingest.parsers.maillog import MaillogParser

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "maillogs"
SAMPLES = found((ROOT / "samples" / "runs").glob("*/maillog*.gz"), "maillogs") + [
    ROOT / "tests" / "fixtures" / "misc" / "postfix37_maillog_file.log.gz"
]

# pflogsumm's Grand Totals as SQL on raw.maillog (pflogsumm 1.1.x, /usr/sbin/pflogsumm):
# it only reads lines whose program is `postfix/...` (default --syslog-name; `postfix/smtps/` and
# `postfix/submission/` prefixes are stripped) with a classic or RFC 3339 stamp, and takes the
# daemon as what follows. These definitions are meant for the dbt marts as they stand.
PF = "regexp_matches(program, '^postfix/') and ts_format in ('syslog', 'rfc3339')"
SMTPD = "regexp_full_match(program, 'postfix(?:/(?:smtps|submission))?/(?:smtpd|postscreen)')"
PFLOGSUMM_SQL = {
    # smtpd/postscreen `QUEUEID: client=...` lines, plus pickup `QUEUEID: uid=|sender=` lines
    "received": f"""count(*) filter (where {PF} and ((kind = 'client' and pid is not null and {SMTPD})
                    or (kind = 'pickup' and queue_id is not null
                        and regexp_full_match(program, 'postfix(?:/(?:smtps|submission))?/pickup'))))""",
    # delivery-agent (and qmgr) `to=<..>, ..., status=sent` lines, one per recipient,
    # except local(8) forwards (`status=sent (forwarded as ...)`)
    "delivered": f"""count(*) filter (where {PF} and kind = 'delivery' and status = 'sent'
                     and not coalesce(contains(status_text, 'forwarded as '), false))""",
    "forwarded": f"""count(*) filter (where {PF} and kind = 'delivery' and status = 'sent'
                     and coalesce(contains(status_text, 'forwarded as '), false))""",
    # messages (distinct queue ids) with at least one `status=deferred` line
    "deferred": f"count(distinct queue_id) filter (where {PF} and kind = 'delivery' and status = 'deferred')",
    "deferrals": f"count(*) filter (where {PF} and kind = 'delivery' and status = 'deferred')",
    # `status=bounced` lines (per recipient)
    "bounced": f"count(*) filter (where {PF} and kind = 'delivery' and status = 'bounced')",
    # smtpd/postscreen `NOQUEUE|QUEUEID: reject: ...` plus cleanup header/body checks
    # `reject:` / `milter-reject:` (smtpd `milter-reject` is not counted by pflogsumm)
    "rejected": f"""count(*) filter (where {PF} and kind = 'reject' and (
                    ({SMTPD} and reject_action = 'reject')
                    or (regexp_full_match(program, 'postfix(?:/(?:smtps|submission))?/cleanup')
                        and reject_stage in ('header', 'body', 'END-OF-MESSAGE'))))""",
    "reject_warnings": f"""count(*) filter (where {PF} and kind = 'reject_warning' and (
                    ({SMTPD} and reject_action = 'reject_warning')
                    or (regexp_full_match(program, 'postfix(?:/(?:smtps|submission))?/cleanup')
                        and reject_stage in ('header', 'body', 'END-OF-MESSAGE'))))""",
    "held": f"count(*) filter (where {PF} and kind = 'hold')",
    "discarded": f"count(*) filter (where {PF} and kind = 'discard')",
}


@pytest.fixture
def con(landing_con):
    return landing_con


def land(con, path: Path, file_id: int = 1, **ctx):
    ctx.setdefault("year", 2026)
    return land_file(con, MaillogParser(), path, file_id=file_id, **ctx)


def rows(con, where: str = "true") -> list[dict]:
    cur = con.execute(f"select * from raw.maillog where {where} order by line_no")
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def n_lines(path: Path) -> int:
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)


def pflogsumm_totals(path: Path) -> dict[str, int]:
    exe = shutil.which("pflogsumm") or "/usr/sbin/pflogsumm"
    if not Path(exe).exists():
        subprocess.run(["apt-get", "install", "-y", "pflogsumm"], check=True, capture_output=True)
        exe = shutil.which("pflogsumm") or "/usr/sbin/pflogsumm"
    text = gzip.decompress(path.read_bytes()).decode("utf-8", "replace")
    out = subprocess.run([exe], input=text, capture_output=True, text=True, check=True).stdout
    grand = out.split("Grand Totals", 1)[1].split("\n\n\n", 1)[0] if "Grand Totals" in out else out
    totals = {}
    for label, key in [
        ("received", "received"),
        ("delivered", "delivered"),
        ("forwarded", "forwarded"),
        ("deferred", "deferred"),
        ("bounced", "bounced"),
        ("rejected", "rejected"),
        ("reject warnings", "reject_warnings"),
        ("held", "held"),
        ("discarded", "discarded"),
    ]:
        m = re.search(rf"^\s*(\d+)([km]?)\s+{label}\b", grand, re.M)
        assert m, f"{label} missing in pflogsumm output"
        assert not m.group(2), "pflogsumm scaled the figure (k/m); use a smaller file"
        totals[key] = int(m.group(1))
    m = re.search(r"deferred\s+\((\d+)\s+deferrals\)", grand)
    totals["deferrals"] = int(m.group(1)) if m else 0
    return totals


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_sample_all_lines_land_and_match_pflogsumm(con, path):
    counts = land(con, path)
    total = n_lines(path)
    assert counts.total == total
    assert counts.parsed + counts.noise + counts.quarantined == total
    landed = con.execute("select count(*) from raw.maillog").fetchone()[0]
    noise = con.execute("select count(*) from raw.noise").fetchone()[0]
    quarantined = con.execute("select count(*) from raw.quarantine").fetchone()[0]
    assert (landed, noise, quarantined) == (counts.parsed, counts.noise, counts.quarantined)
    assert con.execute("select count(distinct line_no) from raw.maillog").fetchone() == (landed,)
    # every line of the file, 1..total, is in exactly one of the three landed tables
    assert con.execute(
        "select count(*), count(distinct line_no), min(line_no), max(line_no) from ("
        " select distinct line_no from raw.maillog union all"
        " select distinct line_no from raw.noise union all"
        " select distinct line_no from raw.quarantine)"
    ).fetchone() == (total, total, 1, total)
    assert (
        con.execute("select count(*) from raw.maillog where ts is null or program is null").fetchone()[0] == 0
    )
    ours = con.execute(
        "select " + ", ".join(f"{sql} as {k}" for k, sql in PFLOGSUMM_SQL.items()) + " from raw.maillog"
    )
    got = dict(zip(PFLOGSUMM_SQL, ours.fetchone(), strict=True))
    assert got == pflogsumm_totals(path)


def test_line_numbers_exact(con):
    path = SAMPLES[0]
    land(con, path)
    lines = gzip.decompress(path.read_bytes()).decode().split("\n")
    for n in (1, 2, 3, 1000, 54321, len(lines) - 1):
        (msg, host) = con.execute("select message, host from raw.maillog where line_no = ?", [n]).fetchone()
        assert lines[n - 1].endswith(msg)
        assert f" {host} " in lines[n - 1]


def test_non_utf8_line_quarantined_with_number(con, tmp_path):
    p = tmp_path / "maillog"
    p.write_bytes(
        b"Nov 21 22:04:34 mx1 postfix/smtpd[1]: connect from localhost[127.0.0.1]\n"
        b"Nov 21 22:04:34 mx1 postfix/smtpd[1]: warning: bad \xff\xfe bytes\n"
        b"\n"
        b"Nov 21 22:04:35 mx1 postfix/smtpd[1]: disconnect from localhost[127.0.0.1] commands=0/0\n"
        b"this is not a log line\n"
    )
    counts = land(con, p)
    assert (counts.total, counts.parsed, counts.noise, counts.quarantined) == (5, 2, 1, 2)
    q = con.execute("select line_no, reason, text from raw.quarantine order by line_no").fetchall()
    assert [r[0] for r in q] == [2, 5]
    assert "UTF-8" in q[0][1] and "\ufffd" in q[0][2]
    assert con.execute("select line_no, kind from raw.noise").fetchall() == [(3, "blank")]
    assert con.execute("select line_no, kind from raw.maillog order by 1").fetchall() == [
        (1, "connect"),
        (4, "disconnect"),
    ]


def test_cr_and_nul_bytes_keep_line_numbers(con, tmp_path):
    p = tmp_path / "maillog"
    p.write_bytes(
        b"Nov 21 22:04:34 mx1 postfix/smtpd[1]: connect from a[1.2.3.4]\r\n"
        b"Nov 21 22:04:34 mx1 postfix/smtpd[1]: odd\rline with \x00 nul\n"
        b"Nov 21 22:04:35 mx1 postfix/qmgr[2]: ABCDEF123: removed\n"
    )
    counts = land(con, p)
    assert (counts.total, counts.parsed) == (3, 3)
    got = con.execute("select line_no, kind, client from raw.maillog order by 1").fetchall()
    assert got == [(1, "connect", "a[1.2.3.4]"), (2, "other", None), (3, "removed", None)]


def test_unknown_postfix_line_kept_as_other(con, tmp_path):
    p = tmp_path / "maillog"
    p.write_text(
        "Nov 21 22:04:34 mx1 postfix/smtpd[13691]: something entirely new: x=1\n"
        "Nov 21 22:04:34 mx1 kernel: [ 12.345] eth0: link up\n"
    )
    land(con, p)
    r = rows(con)
    assert [(x["kind"], x["program"], x["message"]) for x in r] == [
        ("other", "postfix/smtpd", "something entirely new: x=1"),
        ("other", "kernel", "[ 12.345] eth0: link up"),
    ]


def test_postfix_fields(con):
    land(con, SAMPLES[-1])
    d = rows(con, "kind = 'delivery' and status = 'deferred'")[0]
    with gzip.open(SAMPLES[-1], "rt") as fh:  # the first deferred delivery, read by grep's route
        first = next(ln for ln in fh if "status=deferred" in ln)
    assert d["recipient"] == re.search(r"to=<([^>]*)>", first)[1] == "z@down.example"
    assert d["dsn"].startswith("4.") and d["status_text"]
    s = rows(con, "line_no = 62")[0]
    assert s["kind"] == "delivery" and s["queue_id"] == "5E12A9C6789"
    assert (s["relay"], s["status"], s["dsn"], s["status_text"]) == (
        "127.0.0.1[127.0.0.1]:2528",
        "sent",
        "2.0.0",
        "250 2.0.0 Ok",
    )
    assert (s["delay"], s["delay_before_qmgr"], s["delay_in_qmgr"]) == (0.05, 0.02, 0.03)
    rej = rows(con, "kind = 'reject'")[0]
    assert rej["reject_action"] == "reject" and rej["reject_stage"] == "RCPT"
    assert rej["smtp_code"] in (450, 451, 550, 554) and re.fullmatch(r"\d\.\d\.\d", rej["enhanced_code"])
    assert rej["client"] == "localhost[127.0.0.1]" and rej["proto"] == "ESMTP" and rej["helo"]
    assert rej["recipient"] and rej["sender"] and rej["reason"]
    dis = rows(con, "kind = 'disconnect' and commands like '%/%'")[0]
    assert dis["commands_ok"] < dis["commands_total"]
    f = rows(con, "kind = 'fatal'")[0]
    assert f["severity"] == "fatal" and f["detail"].startswith("chdir(")
    assert (
        con.execute("select count(*) from raw.maillog where kind = 'qmgr_from' and size is null").fetchone()[
            0
        ]
        == 0
    )


def test_rfc3339_stamps_carry_their_offset(con):
    land(con, FIX / "rsyslog_rfc3339.log", utc_offset_minutes=600)  # manifest offset must not apply
    r = rows(con)
    assert [x["ts"] for x in r] == [
        datetime(2021, 3, 13, 11, 4, 9, 755361),
        datetime(2021, 3, 13, 11, 4, 9, 760012),
        datetime(2021, 3, 13, 11, 4, 9, 801234),
        datetime(2021, 3, 13, 11, 4, 10, 1),
        datetime(2021, 3, 13, 12, 4, 10, 500000),
        datetime(2021, 3, 13, 17, 4, 10, 600000),
    ]
    assert r[0]["kind"] == "pickup" and r[0]["sender"] == "root"
    assert r[3]["program"] == "postfix-submission/smtpd" and r[3]["client"] == "client.example[198.51.100.4]"
    assert (r[4]["recipient"], r[4]["orig_to"], r[4]["status"]) == ("root@mail.example", "root", "sent")


def test_new_year_rollover_and_utc_offset(con):
    land(con, FIX / "newyear.log", year=2025, utc_offset_minutes=60)
    ts = [x["ts"] for x in rows(con)]
    assert ts == [
        datetime(2025, 12, 31, 22, 59, 58),
        datetime(2025, 12, 31, 22, 59, 59),
        datetime(2025, 12, 31, 23, 0, 0),
        datetime(2025, 12, 31, 22, 59, 59),  # a late December line after midnight stays in 2025
        datetime(2025, 12, 31, 23, 0, 1),
    ]


def test_january_run_starting_with_december_lines(con):
    land(con, FIX / "newyear.log", year=2026, start_utc=datetime(2026, 1, 1, 0, 0))
    assert rows(con)[0]["ts"] == datetime(2025, 12, 31, 23, 59, 58)
    assert rows(con)[2]["ts"] == datetime(2026, 1, 1, 0, 0, 0)


def test_postlogd_zero_padded_day(con, tmp_path):
    p = tmp_path / "maillog"
    p.write_text("Nov 01 22:04:34 mx1 postfix/qmgr[1]: 6E4579C6791: removed\n")
    land(con, p, year=2026)
    assert rows(con)[0]["ts"] == datetime(2026, 11, 1, 22, 4, 34)


def test_sendmail_fields(con):
    land(con, FIX / "sendmail.log", year=2026)
    r = rows(con)
    assert [x["kind"] for x in r] == ["from", "delivery", "reject", "delivery", "tls"]
    f, d, j, df, tls = r
    # `STARTTLS=client, relay=mail.example.com., version=TLSv1.3, verify=FAIL, cipher=..., bits=256/256`
    assert (tls["relay_host"], tls["tls_protocol"], tls["tls_level"], tls["tls_bits"]) == (
        "mail.example.com.",
        "TLSv1.3",
        "FAIL",
        256,
    )
    assert (f["program"], f["queue_id"], f["sender"], f["size"], f["nrcpt"], f["proto"]) == (
        "sendmail",
        "rA37ZTSC026254",
        "alice@example.org",
        1834,
        1,
        "ESMTP",
    )
    assert f["message_id"] == "20261103113530.rA37ZTSC026254@mx.example.org"
    assert f["client"] == "localhost [127.0.0.1]"
    assert (d["recipient"], d["delay"], d["delay_transmission"], d["mailer"], d["status"], d["dsn"]) == (
        "bob@example.com",
        1.0,
        1.0,
        "esmtp",
        "sent",
        "2.0.0",
    )
    assert (
        d["relay"] == "mail.example.com. [192.0.2.25]" and d["status_text"] == "Sent (Ok: queued as 4F2A1C0)"
    )
    assert (j["reject_stage"], j["smtp_code"], j["enhanced_code"], j["recipient"]) == (
        "RCPT",
        550,
        "5.1.1",
        "nobody@example.org",
    )
    assert j["reason"] == "<nobody@example.org>... User unknown"
    assert (df["status"], df["delay"]) == ("deferred", 93784.0)
    assert r[4]["program"] == "sm-mta" and r[4]["queue_id"] is None


def test_exim_fields(con):
    land(con, FIX / "exim_main.log", utc_offset_minutes=60)
    r = rows(con)
    assert [x["kind"] for x in r] == [
        "arrival",
        "delivery",
        "delivery",
        "removed",
        "delivery",
        "delivery",
        "reject",
        "queue_run",
    ]
    a = r[0]
    assert (a["ts"], a["program"], a["pid"], a["queue_id"]) == (
        datetime(2026, 11, 21, 21, 4, 34),
        "exim",
        1201,
        "1rA2bC-000abc-12",
    )
    assert (a["sender"], a["size"], a["proto"], a["message_id"]) == (
        "alice@example.org",
        1320,
        "esmtp",
        "6B021572.3E3@example.org",
    )
    assert a["client"] == "localhost (client.example) [127.0.0.1]:40312"
    d = r[1]
    assert (d["recipient"], d["orig_to"], d["mailer"], d["status"], d["delay"], d["delay_transmission"]) == (
        "bob@bench.test",
        "postmaster@bench.test",
        "maildir_delivery",
        "sent",
        1.0,
        0.102,
    )
    assert (r[4]["status"], r[4]["smtp_code"], r[4]["relay"]) == (
        "bounced",
        550,
        "mx.remote.example [192.0.2.7]",
    )
    assert r[5]["status"] == "deferred"
    j = r[6]
    assert (j["reject_stage"], j["sender"], j["recipient"], j["reason"]) == (
        "RCPT",
        "spam@example.net",
        "u4@bench.test",
        "Unknown user",
    )


def test_qmail_multilog(con):
    land(con, FIX / "qmail_current.log")
    r = rows(con)
    assert [x["kind"] for x in r] == ["new_msg", "arrival", "delivery_start", "delivery", "removed"]
    assert r[0]["ts"] == datetime(2025, 11, 22, 6, 59, 12, 0x1C9C3B24 // 1000)
    assert (r[1]["queue_id"], r[1]["sender"], r[1]["size"]) == ("4711", "alice@example.org", 1320)
    assert (r[2]["recipient"], r[2]["mailer"], r[2]["related_queue_id"]) == (
        "bob@example.com",
        "remote",
        "17",
    )
    assert (r[3]["status"], r[3]["related_queue_id"], r[3]["queue_id"]) == ("sent", "17", "4711")


def test_parse_gives_per_line_ledger():
    lines = list(enumerate((FIX / "sendmail.log").read_text().splitlines(keepends=True), start=1))
    lines.append((len(lines) + 1, "garbage\n"))
    ledger = MaillogParser().parse(lines, ParseContext(year=2026))
    counts = ledger.counts(len(lines))
    assert (counts.parsed, counts.quarantined) == (5, 1)
    assert ledger.items[2][0]["status"] == "sent"
    assert ledger.items[6][0]["quarantine"].startswith("not a mail log line")


def test_sniff():
    p = MaillogParser()
    head = gzip.decompress(SAMPLES[0].read_bytes())[:4096].decode()
    assert p.sniff(head, "maillog.gz") >= 90
    assert p.sniff((FIX / "exim_main.log").read_text(), "main.log") >= 90
    assert p.sniff((FIX / "sendmail.log").read_text(), "maillog") >= 90
    assert p.sniff((FIX / "qmail_current.log").read_text(), "current") >= 90
    assert p.sniff("time,messages,data(K),errors,connections\n12:01,1,2,3,4\n", "postal.csv") == 0
