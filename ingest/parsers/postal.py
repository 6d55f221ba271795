"""postal / bhm / rabid output: per-minute CSV rows with stderr interleaved.

Survives what real archives hold (notes/formats.md, seed 000): header variants,
`Server error:` replies whose CRLF leaves the terminating `.` on its own line,
timeouts and other stderr lines, wrapper noise and shell prompts, rows pasted onto
one line, human annotations, several runs in one file, midnight crossings.

A line is scanned left to right for items; whatever lies between items is classed
as annotation/label noise or quarantined. Clock labels are kept as printed; turning
them into timestamps needs the run's date and timezone and happens in dbt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from ingest.ledger import Ledger
from ingest.parsers.base import ParseContext, Parser

# A clock gap longer than this (minutes) without a header means another run was pasted on.
MAX_GAP_MINUTES = 5

HEADER = re.compile(r"time,[A-Za-z/()]+(?:,[A-Za-z/()]+(?: connections)?)+")
ROW = re.compile(r"(?P<hh>\d{1,2}):(?P<mm>\d{2}),(?P<nums>\d+(?:,\d+)*)(?=\s|$)")
ROWISH = re.compile(r"\d{1,2}:\d{2},\S*")
_ITEM_START = r"(?:\.(?:\s|$)|\d{1,2}:\d{2},\d|Server error:|time,|\[[^\]\s]+[^\]]*\][#$])"
SERVER_ERROR = re.compile(r"Server error:(?P<reply>.*?)(?=\s+" + _ITEM_START + r"|\s*$)")
DOT = re.compile(r"\.(?=\s|$)")
PROMPT = re.compile(
    r"\[(?P<who>[^\]\s]+)[^\]]*\][#$](?P<cmd>.*?)"
    r"(?=\s+(?:time,|Server error:|Can't open config file|\d{1,2}:\d{2},\d)|\s*$)"
)
WRAPPER = re.compile(r"Can't open config file \"[^\"]*\"\. Doing no expansion\.")
CARET = re.compile(r"\^+\*?(?:[ \t]*(?!\d{1,2}:\d{2},)[^\s^]+)?")
SHEBANG = re.compile(r"#!.*")
SEPARATOR = re.compile(r"[=\-*]{5,}(?=\s|$)")
STDERR = {
    re.compile(r"Server timed out on read\."): "read_timeout",
    re.compile(r"Server timed out on write\."): "write_timeout",
    re.compile(r"Can't connect to (?P<host>\S+) port (?P<port>\d+)\."): "connect_failed",
    re.compile(r"Can't write to socket\."): "socket_write_failed",
    re.compile(r"Poll error\."): "poll_error",
    re.compile(r"Can't lock mutex\."): "tool_error",
}
# perror() artefact printed on bhm's stderr
PERROR_SUCCESS = re.compile(r"Success(?=\s|$)")
REPLY = re.compile(
    r"^\s*(?P<code>\d{3})(?:\s*[: -]\s*)?(?:(?P<enh>[245]\.\d{1,3}\.\d{1,3})\b)?\s*:?\s*(?P<detail>.*)$"
)
CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")
NUM_FIELDS = ("messages", "data_kb", "errors", "connections", "ssl_connections", "imap_connections")


@dataclass
class _Segment:
    index: int
    started_by: str
    first_line: int
    header: str | None = None
    rows: int = 0
    events: int = 0
    last_line: int = 0
    last_clock: int = -1  # minute of day of the last row's label
    minute_index: int = -1
    first_clock: int = -1
    pending: list[dict] = field(default_factory=list)


class PostalParser(Parser):
    format = "postal"
    version = "1.1.0"  # 1.1: the reply text of a code-less server error (rabid) kept as detail
    tables = {
        "postal_rows": (
            "segment INTEGER, row_seq INTEGER, minute_index INTEGER, clock_label VARCHAR, "
            "clock_minute INTEGER, first_clock_minute INTEGER, messages BIGINT, data_kb BIGINT, "
            "errors BIGINT, connections BIGINT, ssl_connections BIGINT, imap_connections BIGINT, "
            "is_first_row BOOLEAN, is_repeat_label BOOLEAN"
        ),
        "postal_events": (
            "segment INTEGER, next_row_seq INTEGER, kind VARCHAR, smtp_code INTEGER, "
            "enhanced_code VARCHAR, detail VARCHAR, text VARCHAR"
        ),
        "postal_segments": (
            "segment INTEGER, started_by VARCHAR, first_line INTEGER, last_line INTEGER, "
            "header VARCHAR, n_rows INTEGER, n_events INTEGER"
        ),
    }

    def sniff(self, head: str, name: str) -> int:
        if HEADER.search(head):
            return 95
        lines = [ln.strip() for ln in head.splitlines()[:200] if ln.strip()]
        if not lines:
            return 0
        hits = sum(
            1
            for ln in lines
            if ROW.fullmatch(ln) or ln.startswith("Server error:") or ln == "." or _stderr_kind(ln, 0)
        )
        if hits / len(lines) > 0.6:
            return 80
        if sum(1 for _ in ROW.finditer(head)) >= 3:  # rows pasted onto one line
            return 70
        return 30 if name.lower().startswith(("postal", "bhm", "rabid")) and hits else 0

    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        return _PostalScanner().run(lines)


def _stderr_kind(text: str, pos: int) -> tuple[str, re.Match] | None:
    for rx, kind in STDERR.items():
        m = rx.match(text, pos)
        if m:
            return kind, m
    return None


class _PostalScanner:
    def __init__(self) -> None:
        self.ledger = Ledger()
        self.n_segments = 0
        self.seg = self._new_segment("file_start", 1)
        # events waiting for their row that a batch handed on already holds (segment and
        # next_row_seq NULL until the row comes: then one update sets them), their first and last line
        self.landed = 0
        self.landed_lines = (0, 0)

    # -- segments -------------------------------------------------------------
    def _new_segment(self, started_by: str, line_no: int) -> _Segment:
        self.n_segments += 1
        return _Segment(index=self.n_segments, started_by=started_by, first_line=line_no)

    def _close(self, seg: _Segment) -> None:
        """The segment is complete: its events still waiting for a row, and its summary."""
        self._emit_pending(seg, None)  # printed after the last row: the unreported final minute
        if seg.rows or seg.events or seg.header:
            self.ledger.add_meta(
                "postal_segments",
                line_no=seg.first_line,
                item_no=0,
                segment=seg.index,
                started_by=seg.started_by,
                first_line=seg.first_line,
                last_line=max(seg.last_line, seg.first_line),
                header=seg.header,
                n_rows=seg.rows,
                n_events=seg.events,
            )

    def _start(self, started_by: str, line_no: int) -> None:
        self._close(self.seg)
        self.seg = self._new_segment(started_by, line_no)

    # -- items ----------------------------------------------------------------
    def _emit_pending(self, seg: _Segment, next_row_seq: int | None) -> None:
        """The events waiting for a row have it (or the segment ended: None)."""
        if self.landed:
            first, last = self.landed_lines
            self.ledger.add_update("postal_events", first, last, segment=seg.index, next_row_seq=next_row_seq)
            seg.events += self.landed
            seg.last_line = max(seg.last_line, last)
            self.landed = 0
        for ev in seg.pending:
            self._emit_event(seg, ev, next_row_seq)
        seg.pending.clear()

    def _land_pending(self) -> None:
        """Hand the waiting events on with the batch, their row still to come."""
        pending = self.seg.pending
        for ev in pending:
            self.ledger.add("postal_events", segment=None, next_row_seq=None, **ev)
        first = self.landed_lines[0] if self.landed else pending[0]["line_no"]
        self.landed_lines = (first, pending[-1]["line_no"])
        self.landed += len(pending)
        pending.clear()

    def _emit_event(self, seg: _Segment, ev: dict, next_row_seq: int | None) -> None:
        seg.events += 1
        seg.last_line = max(seg.last_line, ev["line_no"])
        self.ledger.add("postal_events", segment=seg.index, next_row_seq=next_row_seq, **ev)

    def _event(self, line_no: int, item_no: int, kind: str, text: str, **codes) -> None:
        ev = {"line_no": line_no, "item_no": item_no, "kind": kind, "text": text}
        ev.update({"smtp_code": None, "enhanced_code": None, "detail": None}, **codes)
        self.seg.pending.append(ev)

    def _row(self, line_no: int, item_no: int, m: re.Match) -> None:
        hh, mm = int(m["hh"]), int(m["mm"])
        nums = [int(x) for x in m["nums"].split(",")]
        text = m.group(0)
        if hh > 23 or mm > 59:
            self.ledger.add_quarantine(line_no, item_no, "invalid clock in per-minute row", text)
            return
        expected = _header_width(self.seg.header)
        if not 4 <= len(nums) <= 6 or (expected and len(nums) != expected):
            want = f"{expected}" if expected else "4 to 6"
            self.ledger.add_quarantine(
                line_no, item_no, f"per-minute row has {len(nums)} counters, expected {want}", text
            )
            return
        clock = hh * 60 + mm
        seg = self.seg
        repeat = False
        if seg.rows:
            delta = (clock - seg.last_clock) % 1440
            if delta == 0:  # bhm's final partial row repeats the label: it covers the next minute
                repeat, delta = True, 1
            elif delta > MAX_GAP_MINUTES:
                self._start_keeping_pending("clock_jump", line_no)
                seg = self.seg
        if seg.rows:
            seg.minute_index += delta
        else:
            seg.minute_index = 0
            seg.first_clock = clock
        seg.rows += 1
        seg.last_clock = clock
        seg.last_line = line_no
        values = dict(zip(NUM_FIELDS, nums, strict=False))
        self.ledger.add(
            "postal_rows",
            line_no,
            item_no,
            segment=seg.index,
            row_seq=seg.rows,
            minute_index=seg.minute_index,
            clock_label=f"{hh:02d}:{mm:02d}",
            clock_minute=clock,
            first_clock_minute=seg.first_clock,
            **{k: values.get(k) for k in NUM_FIELDS},
            is_first_row=seg.rows == 1,
            is_repeat_label=repeat,
        )
        self._emit_pending(seg, seg.rows)  # printed before this row: happened during its minute

    def _start_keeping_pending(self, started_by: str, line_no: int) -> None:
        # Errors printed just before the jumped-to row belong to that row's run.
        pending, self.seg.pending = self.seg.pending, []
        landed, self.landed = self.landed, 0
        self._start(started_by, line_no)
        self.seg.pending, self.landed = pending, landed

    # -- scanning -------------------------------------------------------------
    def run(self, lines: Iterable[tuple[int, str]]) -> Iterator[Ledger]:
        for line_no, raw in lines:
            if self.ledger.filled(len(self.seg.pending)):
                if self.seg.pending:  # events wait for the row they precede: landed without it
                    self._land_pending()
                yield self.ledger
                self.ledger = Ledger()
            self._scan_line(line_no, raw.rstrip("\r\n"))
        self._close(self.seg)
        yield self.ledger

    def _scan_line(self, line_no: int, line: str) -> None:
        L = self.ledger
        if not line.strip():
            L.add_noise(line_no, 0, "blank", line)
            return
        if SHEBANG.match(line.lstrip()):
            L.add_noise(line_no, 0, "script", line)
            return
        pos, item, gap_start = 0, 0, None
        n = len(line)
        while pos < n:
            if line[pos].isspace():
                pos += 1
                continue
            m = None
            if m := HEADER.match(line, pos):
                self._flush_gap(line_no, item, line, gap_start, pos, before_header=True)
                gap_start = None
                item += 1
                if self.seg.rows:
                    self._start("header", line_no)
                self.seg.header = m.group(0)
                L.add_noise(line_no, item, "header", m.group(0))
            elif m := PROMPT.match(line, pos):
                self._flush_gap(line_no, item, line, gap_start, pos)
                gap_start = None
                item += 1
                if self.seg.rows or self.seg.events or self.seg.pending or self.landed:
                    self._start("prompt", line_no)
                L.add_noise(line_no, item, "prompt", m.group(0))
            elif m := ROW.match(line, pos):
                self._flush_gap(line_no, item, line, gap_start, pos)
                gap_start = None
                item += 1
                self._row(line_no, item, m)
            elif m := SERVER_ERROR.match(line, pos):
                self._flush_gap(line_no, item, line, gap_start, pos)
                gap_start = None
                item += 1
                reply = m["reply"].strip()
                r = REPLY.match(reply)
                codes = {}
                if r:
                    codes = {
                        "smtp_code": int(r["code"]),
                        "enhanced_code": r["enh"],
                        "detail": r["detail"].strip() or None,
                    }
                elif reply:  # no SMTP code: rabid's POP `-ERR ...` / IMAP `1 BAD ...` replies
                    codes = {"detail": reply}
                self._event(line_no, item, "server_error", m.group(0).strip(), **codes)
            elif (sk := _stderr_kind(line, pos)) is not None:
                kind, m = sk
                self._flush_gap(line_no, item, line, gap_start, pos)
                gap_start = None
                item += 1
                detail = f"{m['host']}:{m['port']}" if kind == "connect_failed" else None
                self._event(line_no, item, kind, m.group(0), detail=detail)
            elif (
                (m := DOT.match(line, pos))
                or (m := WRAPPER.match(line, pos))
                or (m := CARET.match(line, pos))
                or (m := SEPARATOR.match(line, pos))
                or (m := PERROR_SUCCESS.match(line, pos))
            ):
                self._flush_gap(line_no, item, line, gap_start, pos)
                gap_start = None
                item += 1
                L.add_noise(line_no, item, _noise_kind(m.group(0)), m.group(0))
            else:
                if gap_start is None:
                    gap_start = pos
                while pos < n and not line[pos].isspace():
                    pos += 1
                continue
            pos = m.end()
        self._flush_gap(line_no, item + 1, line, gap_start, n)

    def _flush_gap(
        self, line_no: int, item: int, line: str, start: int | None, end: int, before_header: bool = False
    ) -> None:
        if start is None:
            return
        text = line[start:end].strip()
        if not text:
            return
        if CJK.search(text) or text.startswith("..."):
            self.ledger.add_noise(line_no, item, "annotation", text)
        elif before_header and text.endswith(":"):
            self.ledger.add_noise(line_no, item, "label", text)
        elif ROWISH.match(text):
            self.ledger.add_quarantine(line_no, item, "malformed per-minute row", text)
        else:
            self.ledger.add_quarantine(line_no, item, "unrecognised text in postal output", text)


def _noise_kind(text: str) -> str:
    if text == ".":
        return "reply_terminator"
    if text.startswith("Can't open config file"):
        return "wrapper"
    if text.startswith("^"):
        return "annotation"
    if text == "Success":
        return "perror"
    return "separator"


def _header_width(header: str | None) -> int | None:
    if not header:
        return None
    return header.count(",")
