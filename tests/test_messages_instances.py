"""`messages` has one row per message, also when Postfix reuses a queue id within a run.

Expected figures come from the raw maillogs, read here with a regex (what `zcat | grep -c`
gives): received = smtpd/postscreen `QUEUEID: client=` plus pickup `QUEUEID: uid=|sender=`
lines (pflogsumm's definition); a queue id used n times has n `removed` lines.
"""

from __future__ import annotations

import gzip
import re
from collections import Counter
from pathlib import Path

import pytest
from conftest import SAMPLES

MAILLOG_RUNS = sorted({p.parent for p in SAMPLES.glob("runs/*/maillog*")})
RECEIVED = re.compile(
    rb"postfix/(?:(?:smtpd|postscreen)\[\d+\]: [0-9A-F]+: client=|pickup\[\d+\]: [0-9A-F]+: (?:uid|sender)=)"
)
REMOVED = re.compile(rb"postfix/qmgr\[\d+\]: ([0-9A-F]+): removed$")


def _lines(run: Path):
    for path in sorted(run.glob("maillog*")):
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        yield from data.splitlines()


def test_sample_runs_with_maillogs_found():
    assert len(MAILLOG_RUNS) >= 5, MAILLOG_RUNS


@pytest.mark.parametrize("run", MAILLOG_RUNS, ids=[p.name for p in MAILLOG_RUNS])
def test_one_message_row_per_received_message(run, con):
    received = 0
    removed: Counter[bytes] = Counter()
    for line in _lines(run):
        received += bool(RECEIVED.search(line))
        if m := REMOVED.search(line):
            removed[m.group(1)] += 1
    reuses = sum(n - 1 for n in removed.values())
    assert received > 0
    rows, later_uses, over_delivered = con.execute(
        """select count(*), count(*) filter (where message_instance > 1),
                  count(*) filter (where delivered_recipients > nrcpt)
           from main.messages where run_id = ?""",
        [run.name],
    ).fetchone()
    assert rows == received
    assert later_uses == reuses
    assert over_delivered == 0


def test_reused_queue_id_is_two_messages(con):
    """e-smtp-source-s5 reuses queue ids (six, in its log); each use is its own message."""
    rows = con.execute(
        """select queue_id, message_instance, nrcpt, delivered_recipients, received_at < first_delivery_at
                  or received_at = first_delivery_at
           from main.messages
           where run_id = 'e-smtp-source-s5'
             and queue_id in (select queue_id from main.messages where message_instance = 2)
           order by queue_id, message_instance"""
    ).fetchall()
    assert len(rows) >= 2 and len(rows) % 2 == 0
    assert [r[1] for r in rows] == [1, 2] * (len(rows) // 2)
    assert all(r[2] == 1 and r[3] == 1 and r[4] for r in rows), rows


QUEUE_LINE = re.compile(rb"^(\w{3} +\d+ [\d:]+) \S+ postfix/([\w/-]+)\[\d+\]: ([0-9A-F]{6,}): (.*)$")
MONTHS = {m: i for i, m in enumerate(b"Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split())}
DELIVERY_AGENTS = {b"smtp", b"lmtp", b"local", b"virtual", b"pipe", b"error", b"discard", b"relay"}


def _replayed_messages(run: Path, file_ids: dict[str, int]) -> Counter:
    """Each message of a run's maillogs by replaying its queue-id lines in (time, file id, line)
    order: an id's instance ends with its `removed` line. Returns (queue id, instance,
    delivered recipients, last delivery status) per message."""
    lines = []
    for path in sorted(run.glob("maillog*")):
        data = path.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        file_id = file_ids[path.name]
        for line_no, line in enumerate(data.splitlines(), start=1):
            if m := QUEUE_LINE.match(line):
                month, day, clock = m.group(1).split()
                when = (MONTHS[month], int(day), clock)
                lines.append((when, file_id, line_no, *m.group(2, 3, 4)))
    instance: Counter[bytes] = Counter()
    messages: dict[tuple[bytes, int], dict] = {}
    for _, _, _, daemon, queue_id, text in sorted(lines):
        key = (queue_id, instance[queue_id] + 1)
        daemon = daemon.rsplit(b"/", 1)[-1]
        is_message_line = (
            (daemon in (b"smtpd", b"postscreen") and text.startswith(b"client="))
            or (daemon == b"pickup" and text.startswith((b"uid=", b"sender=")))
            or (daemon == b"cleanup" and text.startswith(b"message-id="))
            or (daemon == b"qmgr" and text.startswith(b"from="))
        )
        status = re.search(rb"\bstatus=(\w+)", text) if daemon in DELIVERY_AGENTS else None
        if is_message_line or status:
            msg = messages.setdefault(key, {"delivered": 0, "status": "queued"})
            if status:
                msg["status"] = status.group(1).decode()
                msg["delivered"] += status.group(1) == b"sent" and b"forwarded as " not in text
        if daemon == b"qmgr" and text == b"removed":
            instance[queue_id] += 1
    return Counter((q.decode(), n, m["delivered"], m["status"]) for (q, n), m in messages.items())


@pytest.mark.parametrize("run", MAILLOG_RUNS, ids=[p.name for p in MAILLOG_RUNS])
def test_messages_equal_a_replay_of_the_maillog(run, con):
    """Every message's instance, delivered recipients and final status, as a replay of the raw
    lines gives them (c-throttled-queue-backlog's messages span its maillog and drain log)."""
    file_ids = dict(
        con.execute(
            "select regexp_extract(path, '[^/]+$'), file_id from raw.files where path like ?",
            [f"%/{run.name}/maillog%"],
        ).fetchall()
    )
    expected = _replayed_messages(run, file_ids)
    got = Counter(
        con.execute(
            """select queue_id, message_instance, delivered_recipients, final_status
               from main.messages where run_id = ?""",
            [run.name],
        ).fetchall()
    )
    assert sum(expected.values()) > 0
    assert got == expected
