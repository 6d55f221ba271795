"""The contract every format parser fulfils.

A parser declares its landing tables (columns beyond the provenance columns
file_id, line_no, item_no that landing adds), says how sure it is that a file is
its format (`sniff`), and turns lines into Ledgers: `batches(lines, ctx)` yields one ledger per
batch of about BATCH_LINES lines (ingest/ledger.py), its state carried from one batch to the
next, each handed on only where no line waits on a later one (so a batch's lines are final
when it is written); `parse(lines, ctx)` is the same as one ledger. A parser may also offer
`record_batches(path, name, ctx)` (per block: Arrow batches of all lines, noise/quarantine
flagged by kind, or an object that writes its own Parquet part, as the maillog's compiled
`Block`): the landing (ingest/landing.py, ingest/arrow_landing.py) then uses that bulk
path. Parsers import nothing from the landing: they depend only on their input.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import ClassVar

from ingest.ledger import Ledger


@dataclass(frozen=True)
class ParseContext:
    """What a parser may know about the run around the file.

    Year-less or clock-only stamps need the run's date and timezone. The loader
    hashes this context into the file's landing key, so a changed manifest
    re-parses the run's files.
    """

    run_key: str = ""
    year: int | None = None  # for year-less syslog stamps (roll over at New Year)
    run_date: date | None = None
    start_utc: datetime | None = None  # naive UTC
    end_utc: datetime | None = None
    monitor_start_utc: datetime | None = None  # samplers (vmstat/iostat) start here, not at load start
    timezone: str = "UTC"
    utc_offset_minutes: int = 0  # local = UTC + offset
    commands: dict[str, str] = field(default_factory=dict)  # tool/vmstat/iostat command lines

    @property
    def sampler_start_utc(self) -> datetime | None:
        return self.monitor_start_utc or self.start_utc

    def fingerprint(self) -> str:
        import hashlib

        return hashlib.sha1(repr(self).encode()).hexdigest()[:12]


class Parser(ABC):
    format: ClassVar[str]
    version: ClassVar[str]
    tables: ClassVar[dict[str, str]]  # table name -> column DDL

    @abstractmethod
    def sniff(self, head: str, name: str) -> int:
        """0 = not this format, 100 = certain. `head` is the decoded start of the file."""

    def parse(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Ledger:
        """The whole input as one ledger. A parser overrides this or `batches`."""
        return Ledger.merged(self.batches(lines, ctx))

    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        """Ledgers of consecutive lines, each covering every line from the end of the one before
        to its last; a parser that only overrides `parse` gives one."""
        if type(self).parse is Parser.parse:
            raise TypeError(f"{type(self).__name__} overrides neither parse nor batches")
        yield self.parse(lines, ctx)
