"""The per-session record of the project's POP3/IMAP client (`scripts/record/mailbox_client.py`,
used where rabid cannot log in): `utc,protocol,user,ok,messages`, one row per session."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import datetime

from ingest.ledger import Ledger
from ingest.parsers.base import ParseContext, Parser

HEADER = "utc,protocol,user,ok,messages"


class MailboxClientParser(Parser):
    format = "mailbox_client"
    version = "1.0.0"
    tables = {
        "mailbox_client_sessions": (
            "utc TIMESTAMP, protocol VARCHAR, mailbox_user VARCHAR, ok BOOLEAN, messages BIGINT"
        )
    }

    def sniff(self, head: str, name: str) -> int:
        return 90 if head.lstrip("\ufeff").startswith(HEADER) else 0

    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        L = Ledger()
        for line_no, raw in lines:
            if L.full:
                yield L
                L = Ledger()
            text = raw.rstrip("\r\n").lstrip("\ufeff")
            if not text.strip():
                L.add_noise(line_no, 0, "blank", text)
                continue
            if text == HEADER:
                L.add_noise(line_no, 0, "header", text)
                continue
            parts = text.split(",")
            try:
                utc, protocol, user, ok, messages = parts
                row = {
                    "utc": datetime.strptime(utc, "%Y-%m-%dT%H:%M:%SZ"),
                    "protocol": protocol,
                    "mailbox_user": user,
                    "ok": {"1": True, "0": False}[ok],
                    "messages": int(messages),
                }
            except (ValueError, KeyError):
                L.add_quarantine(line_no, 0, "not a utc,protocol,user,ok,messages row", text)
                continue
            L.add("mailbox_client_sessions", line_no, 1, **row)
        yield L
