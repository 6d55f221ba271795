"""queue.txt from the benchmark's queue sampler: `utc,incoming,active,deferred,maildrop`."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ingest.ledger import Ledger
from ingest.parsers.base import ParseContext, Parser
from ingest.parsers.smtp_source import parse_iso_utc

HEADER = re.compile(r"^utc,incoming,active,deferred,maildrop$")
ROW = re.compile(
    r"^(?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d))"
    r",(?P<incoming>\d+),(?P<active>\d+),(?P<deferred>\d+),(?P<maildrop>\d+)$"
)
QUEUES = ("incoming", "active", "deferred", "maildrop")


class QueueSizesParser(Parser):
    format = "queue_sizes"
    version = "1.0.0"
    tables = {
        "queue_samples": (
            "sampled_at TIMESTAMP, incoming BIGINT, active BIGINT, deferred BIGINT, maildrop BIGINT"
        )
    }

    def sniff(self, head: str, name: str) -> int:
        lines = [ln.strip() for ln in head.splitlines()[:50] if ln.strip()]
        if not lines:
            return 0
        if HEADER.match(lines[0]):
            return 98
        rows = sum(1 for ln in lines if ROW.match(ln))
        return 80 if rows / len(lines) > 0.8 else 0

    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        L = Ledger()
        for line_no, raw in lines:
            if L.full:
                yield L
                L = Ledger()
            text = raw.strip()
            if not text:
                L.add_noise(line_no, 0, "blank", raw)
            elif HEADER.match(text):
                L.add_noise(line_no, 0, "header", text)
            elif m := ROW.match(text):
                L.add(
                    "queue_samples",
                    line_no,
                    0,
                    sampled_at=parse_iso_utc(m["at"]),
                    **{q: int(m[q]) for q in QUEUES},
                )
            else:
                L.add_quarantine(
                    line_no, 0, "not a queue sample row (utc,incoming,active,deferred,maildrop)", raw
                )
        yield L
