"""A run's date from its own content, when its run.toml gives none: the first full stamp
(date and year) of each data file's head, the earliest of them. File modification times
are never used: a copy (`cp`, unpacking) moves them, by days.

Stamps with a year: ISO 8601 / RFC 3339 (`vmstat -t`, the queue sampler, smtp-source,
RFC 3339 syslog, Exim) and sysstat's `MM/DD/YY` header (iostat). Classic syslog stamps
(RFC 3164, `Nov 21 22:05:11`) carry month and day but no year: without a stamp with a year,
the day is theirs and the year the latest that does not put it in the future (as syslog
readers such as pflogsumm assume), and the note says so. Postal's clock labels (`22:06`)
carry no day: alone they date no run."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from ingest.source import BadInput, FileSource

ISO = re.compile(r"(?<![\d.])(?P<y>(?:19|20)\d\d)-(?P<m>\d\d)-(?P<d>\d\d)[T ]\d\d:\d\d:\d\d")
SYSSTAT = re.compile(r"^Linux \S+ \(\S+\)\s+(?P<m>\d\d)/(?P<d>\d\d)/(?P<y>\d\d(?:\d\d)?)\s", re.M)
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
RFC3164 = re.compile(rf"^(?P<mon>{'|'.join(MONTHS)}) (?P<d>[ 0-9]?\d) \d\d:\d\d:\d\d ", re.M)
DATED_FORMATS = {"maillog", "vmstat", "iostat", "queue_sizes", "smtp_source", "postal"}


def first_date(head: str) -> date | None:
    """The earliest valid date among the first stamps of a file's head."""
    found = []
    for rx in (ISO, SYSSTAT):
        for m in rx.finditer(head):
            y = int(m["y"])
            y += 2000 if y < 100 else 0
            try:
                found.append(date(y, int(m["m"]), int(m["d"])))
            except ValueError:  # an impossible date is no date
                continue
            break  # the file's first valid stamp of this kind
    return min(found, default=None)


def month_day(head: str) -> tuple[int, int] | None:
    """(month, day) of a head's first RFC 3164 stamp."""
    for m in RFC3164.finditer(head):
        month, day = MONTHS.index(m["mon"]) + 1, int(m["d"])
        if 1 <= day <= (29 if month == 2 else 31):
            return month, day
    return None


def latest_past_year(month: int, day: int, today: date | None = None) -> date:
    """The date of month/day in the latest year that does not put it after tomorrow."""
    today = today or datetime.now(UTC).date()
    for year in range(today.year, today.year - 8, -1):
        try:
            d = date(year, month, day)
        except ValueError:  # Feb 29 of a year that has none
            continue
        if d <= today + timedelta(days=1):
            return d
    return date(today.year - 1, month, min(day, 28))


def content_date(files: list[tuple[FileSource, str | None]]) -> tuple[date, str] | None:
    """(date, where it came from) for files given as (source, detected format)."""
    best: tuple[date, str] | None = None
    yearless: tuple[int, int, str] | None = None
    for src, fmt in files:
        if fmt not in DATED_FORMATS:
            continue
        try:
            head = src.head().decode("utf-8", errors="replace")
        except (BadInput, OSError):
            continue
        d = first_date(head)
        if d is not None and (best is None or d < best[0]):
            best = (d, f"the stamps of {src.rel_path}")
        if d is None and fmt == "maillog" and yearless is None and (md := month_day(head)):
            yearless = (*md, src.rel_path)
    if best is None and yearless is not None:
        month, day, path = yearless
        how = f"the stamps of {path} (they have no year: the latest year not in the future assumed)"
        best = (latest_past_year(month, day), how)
    return best
