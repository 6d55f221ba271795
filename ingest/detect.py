"""Recognising a file's format from its content (the name is only a tie-breaker)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.parsers import PARSERS
from ingest.source import FileSource

STRAY_CONTROL = re.compile(r"[\x00-\x07\x0b\x0e-\x1a\x1c-\x1f\x7f]")

# Formats we recognise but have no parser for yet: the file is recorded as
# 'unsupported' (with its lines counted), never silently ignored.
RECOGNISED_ONLY: dict[str, re.Pattern[str]] = {}


@dataclass(frozen=True)
class Detection:
    format: str | None  # None: not recognised
    note: str | None = None


def detect(source: FileSource) -> Detection:
    name = source.rel_path.rsplit("/", 1)[-1]
    if name == "run.toml":
        return Detection("manifest")
    head_bytes = source.head()  # binary refused (BadInput), UTF-16 already decoded
    if not head_bytes:
        return Detection("empty")
    head = head_bytes.decode("utf-8", errors="replace")
    # a line with a stray control byte will be quarantined; it must not hide the format
    head = "\n".join(ln for ln in head.split("\n") if not STRAY_CONTROL.search(ln))
    scores = {fmt: p.sniff(head, name) for fmt, p in PARSERS.items()}
    best = max(scores, key=lambda k: scores[k], default=None)
    if best and scores[best] >= 50:
        return Detection(best, _name_note(name, best))
    for fmt, rx in RECOGNISED_ONLY.items():
        if rx.search(head):
            return Detection(fmt, _name_note(name, fmt))
    if best and scores[best] > 0:
        return Detection(best, "weak match by name")
    return Detection(None)


NAME_HINTS = {
    "postal": "postal",
    "bhm": "postal",
    "rabid": "postal",
    "maillog": "maillog",
    "vmstat": "vmstat",
    "iostat": "iostat",
}


def _name_note(name: str, fmt: str) -> str | None:
    for hint, hinted in NAME_HINTS.items():
        if hint in name.lower() and hinted != fmt:
            return f"name suggests {hinted}, content is {fmt}"
    return None
