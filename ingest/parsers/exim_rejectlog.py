"""Exim's rejectlog: a second copy of the mainlog's reject lines, with the message's headers
after a reject at DATA time.

Exim writes every reject line to the mainlog too, where the maillog parser counts it; counting
this file as well would count each reject twice. So its reject lines are known noise (kind
`exim_rejectlog_copy`), the header lines after them too (`exim_rejectlog_headers`), and a
stamped line that is not a reject is quarantined: a rejectlog should hold none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ingest.ledger import Ledger
from ingest.parsers.base import ParseContext, Parser

STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?(?: [+-]\d{4})?(?: \[\d+\])? ")
# `H=(helo) [ip] F=<s> rejected RCPT <r>: ...`, `... temporarily rejected MAIL ...`,
# `... rejected after DATA: ...`, `... rejected connection in "connect" ACL: ...`
REJECT = re.compile(r" (?:temporarily )?rejected (?:RCPT|MAIL|EHLO|HELO|VRFY|after DATA|connection)\b")


class EximRejectlogParser(Parser):
    format = "exim_rejectlog"
    version = "1.0.0"
    tables: dict[str, str] = {}

    def sniff(self, head: str, name: str) -> int:
        stamped = [ln for ln in head.splitlines()[:50] if STAMP.match(ln)]
        if not stamped or not all(REJECT.search(ln) for ln in stamped):
            return 0
        # a mainlog holding only rejects reads the same: its name decides
        return 95 if "reject" in name.lower() else 40

    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        L = Ledger()
        after_reject = False
        for line_no, raw in lines:
            if L.full:
                yield L
                L = Ledger()
            text = raw.rstrip("\r\n")
            if not text.strip():
                L.add_noise(line_no, 0, "blank", raw)
            elif STAMP.match(text):
                after_reject = bool(REJECT.search(text))
                if after_reject:
                    L.add_noise(line_no, 0, "exim_rejectlog_copy", text)
                else:
                    L.add_quarantine(line_no, 0, "an Exim line that is not a reject in a rejectlog", text)
            elif after_reject:
                L.add_noise(line_no, 0, "exim_rejectlog_headers", text)
            else:
                reason = "not an Exim rejectlog line (no stamp, no reject before it)"
                L.add_quarantine(line_no, 0, reason, text)
        yield L
