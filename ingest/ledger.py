"""Line accounting: every input line ends up parsed, noise, or quarantined.

A parser reports what each line produced; the ledger decides the line's single
status (parsed > quarantined > noise) so that parsed + noise + quarantined equals
the number of lines in the file, and refuses to finish if a line produced nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

PARSED, NOISE, QUARANTINED = "parsed", "noise", "quarantined"
# The columns every landed row starts with: the file and line it came from (item: its rank
# among the rows of one line).
PROVENANCE = "file_id BIGINT NOT NULL, line_no INTEGER, item_no INTEGER"
_RANK = {NOISE: 0, QUARANTINED: 1, PARSED: 2}
# Lines a parser accounts for in one ledger before it hands the ledger on (Parser.batches):
# the landing writes and drops each, so memory stays flat whatever the file's length.
BATCH_LINES = 50_000
# Whether ledgers keep the per-line view (`items`) that only `mtabench parse` prints: the
# landing turns it off (it doubles a batch's memory).
KEEP_ITEMS: ContextVar[bool] = ContextVar("ledger_keep_items", default=True)


@dataclass(frozen=True)
class LineCounts:
    total: int
    parsed: int
    noise: int
    quarantined: int
    # parsed lines of a program the parser knows whose shape it does not understand (kind
    # `other`; maillog only, None for other formats) and the first of them
    other_known: int | None = None
    first_other_known: int | None = None

    def __post_init__(self) -> None:
        if self.parsed + self.noise + self.quarantined != self.total:
            raise ValueError(f"line accounting broken: {self}")


@dataclass
class Ledger:
    """Collects records per table plus noise and quarantine items, keyed by line."""

    rows: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    noise: list[dict[str, Any]] = field(default_factory=list)
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    status: dict[int, str] = field(default_factory=dict)
    # rows describing the file as a whole (e.g. segments); they mark no line
    meta: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    # values of rows an earlier batch of the file holds, known only now: (table, first line,
    # last line, values) for the rows of those lines whose `values` columns are all NULL
    updates: list[tuple[str, int, int, dict[str, Any]]] = field(default_factory=list)
    # per-line JSON view for `mtabench parse` (not kept while landing: KEEP_ITEMS)
    items: dict[int, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))
    keep_items: bool = field(default_factory=KEEP_ITEMS.get)

    def _mark(self, line_no: int, status: str) -> None:
        old = self.status.get(line_no)
        if old is None or _RANK[status] > _RANK[old]:
            self.status[line_no] = status

    def add(self, table: str, line_no: int, item_no: int, **fields: Any) -> None:
        rec = {"line_no": line_no, "item_no": item_no, **fields}
        self.rows[table].append(rec)
        if self.keep_items:
            self.items[line_no].append({"table": table, **fields})
        self._mark(line_no, PARSED)

    def add_meta(self, table: str, **fields: Any) -> None:
        self.meta[table].append(fields)

    def add_update(self, table: str, first_line: int, last_line: int, **values: Any) -> None:
        self.updates.append((table, first_line, last_line, values))

    def add_noise(self, line_no: int, item_no: int, kind: str, text: str) -> None:
        self.noise.append({"line_no": line_no, "item_no": item_no, "kind": kind, "text": text})
        if self.keep_items:
            self.items[line_no].append({"noise": kind, "text": text})
        self._mark(line_no, NOISE)

    def add_quarantine(self, line_no: int, item_no: int, reason: str, text: str) -> None:
        self.quarantine.append({"line_no": line_no, "item_no": item_no, "reason": reason, "text": text})
        if self.keep_items:
            self.items[line_no].append({"quarantine": reason, "text": text})
        self._mark(line_no, QUARANTINED)

    @property
    def full(self) -> bool:
        """Enough lines for one batch: a streaming parser hands this ledger on at its next
        point of rest (no line waiting on a later one)."""
        return self.filled()

    def filled(self, waiting: int = 0) -> bool:
        """`full`, counting `waiting` lines the parser holds and has not marked yet."""
        return len(self.status) + waiting >= BATCH_LINES

    @classmethod
    def merged(cls, ledgers: Iterable[Ledger]) -> Ledger:
        """One ledger of a file's batches, in order (the per-line view reads a whole file)."""
        out = cls()
        for part in ledgers:
            for table, recs in part.rows.items():
                out.rows[table].extend(recs)
            for table, recs in part.meta.items():
                out.meta[table].extend(recs)
            out.noise.extend(part.noise)
            out.quarantine.extend(part.quarantine)
            for line_no, status in part.status.items():
                out._mark(line_no, status)
            for line_no, items in part.items.items():
                out.items[line_no].extend(items)
            for table, first, last, values in part.updates:
                out._apply(table, first, last, values)
        return out

    def _apply(self, table: str, first: int, last: int, values: dict[str, Any]) -> None:
        """An update of rows (and their per-line view) already in this ledger."""
        rows = [r for r in self.rows[table] if first <= r["line_no"] <= last]
        views = [i for n in range(first, last + 1) for i in self.items.get(n, ()) if i.get("table") == table]
        for rec in (*rows, *views):
            if all(rec.get(k) is None for k in values):
                rec.update(values)

    def counts(self, total_lines: int) -> LineCounts:
        missing = [n for n in range(1, total_lines + 1) if n not in self.status]
        if missing:
            raise AssertionError(f"parser left lines unaccounted for: {missing[:10]}")
        vals = list(self.status.values())
        return LineCounts(total_lines, vals.count(PARSED), vals.count(NOISE), vals.count(QUARANTINED))


@dataclass
class BatchTally:
    """A file's line counts summed over its batches' ledgers, each batch checked to account for
    the lines after the batch before it, every one once: together they account for 1..N."""

    last: int = 0  # the highest line accounted for so far
    counted: dict[str, int] = field(default_factory=lambda: dict.fromkeys(_RANK, 0))

    def add(self, ledger: Ledger) -> None:
        if not ledger.status:
            return
        top = max(ledger.status)
        if top - self.last != len(ledger.status) or min(ledger.status) <= self.last:
            missing = [n for n in range(self.last + 1, top + 1) if n not in ledger.status]
            raise AssertionError(
                f"parser left lines unaccounted for: {missing[:10]}"
                if missing
                else f"a batch accounts again for lines up to {self.last}"
            )
        for status in ledger.status.values():
            self.counted[status] += 1
        self.last = top

    def counts(self, total_lines: int) -> LineCounts:
        if self.last != total_lines:
            missing = list(range(self.last + 1, total_lines + 1))[:10]
            raise AssertionError(f"parser left lines unaccounted for: {missing}")
        c = self.counted
        return LineCounts(total_lines, c[PARSED], c[NOISE], c[QUARANTINED])
