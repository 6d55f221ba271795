"""Parse with per-line isolation: a value error on one line quarantines that line, not the file.

Parsers convert text as they go (`int()`, `datetime()`, `strptime`). On hostile input those
raise ValueError (a date of 2026-02-30, an integer of 5,000 digits). Rather than wrap every
conversion of every parser, the guard finds the input line the parser was working on when
it raised (the innermost parser frame holding a line number), takes that line out, and
parses again (the batches already handed on are not handed on again); the line is
quarantined with the error as its reason. Anything that is not a
ValueError, or a ValueError with no line to blame, is a parser bug: ParserBug names the
file and line and fails the run (the loader never records it as bad input).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType

from ingest.ledger import QUARANTINED, Ledger
from ingest.parsers.base import ParseContext, Parser
from ingest.source import BadInput

PARSERS_DIR = str(Path(__file__).parent / "parsers")
MAX_BAD_LINES = 200  # each bad value costs one re-parse; past this the file is bad input
LINE_NAMES = ("line_no", "n", "no")
ITEM_NAMES = ("it", "item", "r", "row")


class ParserBug(Exception):
    """A parser failed in a way bad input should never cause; the message names file and line."""


class TooManyBadValues(ValueError):
    pass


def blamed_line(
    tb: TracebackType | None, valid: Container[int] | None = None, parsers_only: bool = True
) -> int | None:
    """The line number the innermost parser frame was handling when the exception was raised.

    Only frames of ingest/parsers count for ValueError (a bad value); a bug may be anywhere."""
    valid = valid if valid is not None else range(1, 1 << 62)
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        if parsers_only and not frame.f_code.co_filename.startswith(PARSERS_DIR):
            continue
        local = frame.f_locals
        for name in LINE_NAMES:
            if isinstance(v := local.get(name), int) and not isinstance(v, bool) and v in valid:
                return v
        for name in ITEM_NAMES:
            v = getattr(local.get(name), "line_no", None)
            if isinstance(v, int) and v in valid:
                return v
    return None


class GuardedParse:
    """parser.batches over a file's lines, with lines that raise ValueError quarantined (reason:
    the error); iterate it for the ledgers, then read `lines_total`.

    `open_lines` gives the file's lines afresh: a bad value is found while parsing the batch in
    hand (a parser hands a batch on only where no earlier line can still raise), so the parse
    starts over without that line, and the batches handed out before, which are the same again,
    are skipped. Each bad line's quarantine item goes with the batch its number falls in."""

    def __init__(
        self,
        parser: Parser,
        open_lines: Callable[[], Iterable[tuple[int, str]]],
        ctx: ParseContext,
        where: str = "<input>",
    ) -> None:
        self.parser, self.open_lines, self.ctx, self.where = parser, open_lines, ctx, where
        self.lines_total: int | None = None  # known once every batch is out

    def __iter__(self) -> Iterator[Ledger]:
        bad: dict[int, tuple[str, str]] = {}  # line_no -> (reason, text)
        unplaced: list[int] = []  # bad lines no batch handed out yet has reached
        handed = 0  # batches handed out
        last_out = 0  # the highest line number of those batches
        while True:
            read = _Lines(self.open_lines(), bad)
            try:
                for i, ledger in enumerate(self.parser.batches(read, self.ctx)):
                    top = max(ledger.status, default=0)
                    read.forget_through(top)
                    if i < handed:  # handed out before this line went bad: the same again
                        continue
                    for line_no in [n for n in unplaced if n <= top]:
                        _quarantine(ledger, line_no, *bad[line_no])
                        unplaced.remove(line_no)
                    handed += 1
                    last_out = max(last_out, top)
                    yield ledger
                break
            except BadInput:
                raise  # the file itself cannot be read: not a line's fault
            except ValueError as exc:
                line_no = blamed_line(sys.exc_info()[2], range(last_out + 1, read.last + 1))
                if line_no is None or line_no in bad:
                    raise ParserBug(f"{self._who()}: {type(exc).__name__}: {exc}") from exc
                if len(bad) >= MAX_BAD_LINES:
                    raise TooManyBadValues(
                        f"more than {MAX_BAD_LINES} lines with bad values (the last at line {line_no}: {exc})"
                    ) from exc
                bad[line_no] = (f"bad value: {exc}"[:300], read.texts[line_no])
                unplaced.append(line_no)
            except Exception as exc:
                line_no = blamed_line(sys.exc_info()[2], range(1, read.last + 1), parsers_only=False)
                raise ParserBug(f"{self._who(line_no)}: {type(exc).__name__}: {exc}") from exc
        if unplaced:  # bad lines after the last line any batch marked
            tail = Ledger()
            for line_no in sorted(unplaced):
                _quarantine(tail, line_no, *bad[line_no])
            yield tail
        self.lines_total = read.count

    def _who(self, line_no: int | None = None) -> str:
        at = f" line {line_no}" if line_no is not None else ""
        return f"{self.where}{at}: {self.parser.format} parser"


class _Lines:
    """A file's lines without the bad ones, counting what it reads and keeping the text of
    each line not yet in a batch handed on (the one a bad value is blamed on is among them)."""

    def __init__(self, lines: Iterable[tuple[int, str]], bad: Container[int]) -> None:
        self.lines, self.bad = iter(lines), bad
        self.count = self.last = 0
        self.texts: dict[int, str] = {}

    def __iter__(self) -> Iterator[tuple[int, str]]:
        for line_no, text in self.lines:
            self.count += 1
            self.last = line_no
            if line_no not in self.bad:
                self.texts[line_no] = text
                yield line_no, text

    def forget_through(self, line_no: int) -> None:
        self.texts = {n: t for n, t in self.texts.items() if n > line_no}


def _quarantine(ledger: Ledger, line_no: int, reason: str, text: str) -> None:
    ledger.quarantine.append({"line_no": line_no, "item_no": 0, "reason": reason, "text": text})
    ledger.items[line_no].append({"quarantine": reason})
    ledger.status[line_no] = QUARANTINED


def parse_guarded(
    parser: Parser, lines: Sequence[tuple[int, str]], ctx: ParseContext, where: str = "<input>"
) -> Ledger:
    """parser.parse, with lines that raise ValueError quarantined (reason: the error)."""
    return Ledger.merged(GuardedParse(parser, lambda: lines, ctx, where))
