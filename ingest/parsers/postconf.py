"""`postconf -n` dumps: the MTA's non-default settings, one `name = value` per line."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from ingest.ledger import Ledger
from ingest.parsers.base import ParseContext, Parser

SETTING = re.compile(r"^(?P<name>[A-Za-z][A-Za-z0-9_]*)\s*=\s?(?P<value>.*)$")


class PostconfParser(Parser):
    format = "postconf"
    version = "1.0.0"
    tables = {"postconf_settings": "name VARCHAR, value VARCHAR"}

    def sniff(self, head: str, name: str) -> int:
        # as parse() reads them: blank and `#` comment lines are noise, the rest settings
        lines = [
            ln.rstrip("\r") for ln in head.split("\n")[:200] if ln.strip() and not ln.lstrip().startswith("#")
        ]
        if len(lines) >= 3 and all(SETTING.match(ln) for ln in lines):
            return 60 + (20 if "postconf" in name.lower() or "main.cf" in name.lower() else 0)
        return 0

    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        ledger = Ledger()
        for line_no, raw in lines:
            if ledger.full:
                yield ledger
                ledger = Ledger()
            text = raw.rstrip("\r\n")
            if not text.strip():
                ledger.add_noise(line_no, 0, "blank", text)
            elif text.lstrip().startswith("#"):
                ledger.add_noise(line_no, 0, "comment", text)
            elif m := SETTING.match(text):
                ledger.add("postconf_settings", line_no, 1, name=m["name"], value=m["value"].strip())
            else:
                ledger.add_quarantine(line_no, 0, "not a `name = value` setting", text)
        yield ledger
