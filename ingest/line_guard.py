"""Parse with per-line isolation: a value error on one line quarantines that line, not the file.

Parsers convert text as they go (`int()`, `datetime()`, `strptime`). On hostile input those
raise ValueError (a date of 2026-02-30, an integer of 5,000 digits). Rather than wrap every
conversion of every parser, the guard finds the input line the parser was working on when
it raised (the innermost parser frame holding a line number), takes that line out, and
parses again; the line is quarantined with the error as its reason. Anything that is not a
ValueError, or a ValueError with no line to blame, is a parser bug: ParserBug names the
file and line and fails the run (the loader never records it as bad input).
"""

from __future__ import annotations

import sys
from collections.abc import Container, Sequence
from pathlib import Path
from types import TracebackType

from ingest.ledger import QUARANTINED, Ledger
from ingest.parsers.base import ParseContext, Parser

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


def parse_guarded(
    parser: Parser, lines: Sequence[tuple[int, str]], ctx: ParseContext, where: str = "<input>"
) -> Ledger:
    """parser.parse, with lines that raise ValueError quarantined (reason: the error)."""
    bad: dict[int, str] = {}
    while True:
        kept = [(n, t) for n, t in lines if n not in bad] if bad else lines
        try:
            ledger = parser.parse(kept, ctx)
            break
        except ValueError as exc:
            line_no = blamed_line(sys.exc_info()[2], {n for n, _ in kept})
            if line_no is None:
                raise ParserBug(f"{where}: {parser.format} parser: {type(exc).__name__}: {exc}") from exc
            if len(bad) >= MAX_BAD_LINES:
                raise TooManyBadValues(
                    f"more than {MAX_BAD_LINES} lines with bad values (the last at line {line_no}: {exc})"
                ) from exc
            bad[line_no] = f"bad value: {exc}"[:300]
        except Exception as exc:
            line_no = blamed_line(sys.exc_info()[2], {n for n, _ in kept}, parsers_only=False)
            at = f" line {line_no}" if line_no is not None else ""
            raise ParserBug(f"{where}{at}: {parser.format} parser: {type(exc).__name__}: {exc}") from exc
    if bad:
        texts = dict(lines)
        for line_no, reason in sorted(bad.items()):
            ledger.quarantine.append(
                {"line_no": line_no, "item_no": 0, "reason": reason, "text": texts[line_no]}
            )
            ledger.items[line_no].append({"quarantine": reason})
            ledger.status[line_no] = QUARANTINED
    return ledger
