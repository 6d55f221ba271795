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
