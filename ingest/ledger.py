"""Line accounting: every input line ends up parsed, noise, or quarantined.

A parser reports what each line produced; the ledger decides the line's single
status (parsed > quarantined > noise) so that parsed + noise + quarantined equals
the number of lines in the file, and refuses to finish if a line produced nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

PARSED, NOISE, QUARANTINED = "parsed", "noise", "quarantined"
_RANK = {NOISE: 0, QUARANTINED: 1, PARSED: 2}


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
    # per-line JSON view for `mtabench parse`
    items: dict[int, list[dict[str, Any]]] = field(default_factory=lambda: defaultdict(list))

    def _mark(self, line_no: int, status: str) -> None:
        old = self.status.get(line_no)
        if old is None or _RANK[status] > _RANK[old]:
            self.status[line_no] = status

    def add(self, table: str, line_no: int, item_no: int, **fields: Any) -> None:
        rec = {"line_no": line_no, "item_no": item_no, **fields}
        self.rows[table].append(rec)
        self.items[line_no].append({"table": table, **fields})
        self._mark(line_no, PARSED)

    def add_meta(self, table: str, **fields: Any) -> None:
        self.meta[table].append(fields)

    def add_noise(self, line_no: int, item_no: int, kind: str, text: str) -> None:
        self.noise.append({"line_no": line_no, "item_no": item_no, "kind": kind, "text": text})
        self.items[line_no].append({"noise": kind, "text": text})
        self._mark(line_no, NOISE)

    def add_quarantine(self, line_no: int, item_no: int, reason: str, text: str) -> None:
        self.quarantine.append({"line_no": line_no, "item_no": item_no, "reason": reason, "text": text})
        self.items[line_no].append({"quarantine": reason, "text": text})
        self._mark(line_no, QUARANTINED)

    def counts(self, total_lines: int) -> LineCounts:
        missing = [n for n in range(1, total_lines + 1) if n not in self.status]
        if missing:
            raise AssertionError(f"parser left lines unaccounted for: {missing[:10]}")
        vals = list(self.status.values())
        return LineCounts(total_lines, vals.count(PARSED), vals.count(NOISE), vals.count(QUARANTINED))
