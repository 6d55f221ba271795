"""smtp-source / smtp-sink output (Postfix test tools) as captured by a benchmark wrapper.

`smtp-source -c` prints a running counter separated by CR (`1\\r2\\r...20000\\r`) on one
line; the wrapper adds `start <ISO UTC>`, `smtp-source exit=N` and `end <ISO UTC>` lines.
`smtp-sink -c` prints `sess=N quit=N mesg=N\\r` repeatedly. Each run (from a `start` line)
gives one `smtp_source_runs` row: messages = the last counter value.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime

from ingest.ledger import Ledger
from ingest.parsers.base import ParseContext, Parser

STAMP = re.compile(
    r"^(?P<what>start|end) (?P<at>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?)$"
)
EXIT = re.compile(r"^(?P<tool>smtp-source|smtp-sink) exit=(?P<code>-?\d+)$")
COUNTER = re.compile(r"^(?:\d+\r)*\d+\r*$")  # \r*: a CRLF line end adds one
SINK = re.compile(r"^(?:sess=\d+ quit=\d+ mesg=\d+\r?)+$")
SINK_ITEM = re.compile(r"sess=(\d+) quit=(\d+) mesg=(\d+)")
WRAPPER = re.compile(r"^(?:\+ .*|(?:real|user|sys)\s+\d+m[\d.]+s|\$ .*|# .*)$")


def parse_iso_utc(text: str) -> datetime:
    """ISO 8601 with up to nanoseconds and Z/offset -> naive UTC (microsecond precision)."""
    m = re.match(r"^(.*T\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?$", text)
    if not m:
        raise ValueError(f"not an ISO timestamp: {text!r}")
    base, frac, zone = m.groups()
    frac = (frac or "0")[:6].ljust(6, "0")
    zone = "+00:00" if zone in (None, "Z") else zone
    dt = datetime.fromisoformat(f"{base}.{frac}{zone}")
    return dt.astimezone(UTC).replace(tzinfo=None)


class SmtpSourceParser(Parser):
    format = "smtp_source"
    version = "1.0.1"  # 1.0.1: a counter line with a CRLF end
    tables = {
        "smtp_source_runs": (
            "run_seq INTEGER, start_at TIMESTAMP, end_at TIMESTAMP, duration_s DOUBLE, "
            "messages BIGINT, exit_code INTEGER, sink_sessions BIGINT, sink_quits BIGINT, "
            "sink_messages BIGINT"
        ),
        "smtp_source_lines": (
            "run_seq INTEGER, kind VARCHAR, event_at TIMESTAMP, value BIGINT, n_values BIGINT, text VARCHAR"
        ),
    }

    def sniff(self, head: str, name: str) -> int:
        lines = head.split("\n")[:20]
        if any(STAMP.match(ln) for ln in lines) and any(
            COUNTER.match(ln) and "\r" in ln or EXIT.match(ln) for ln in lines
        ):
            return 95
        if any(SINK.match(ln) for ln in lines if ln):
            return 90
        if "smtp-source" in name or "smtp-sink" in name:
            return 40 if any(COUNTER.match(ln) for ln in lines if ln) else 0
        return 0

    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        L = Ledger()
        n_runs = 0
        run: dict | None = None

        def current(line_no: int) -> dict:
            nonlocal run, n_runs
            if run is None:
                n_runs += 1
                run = {
                    "run_seq": n_runs,
                    "line_no": line_no,
                    "item_no": 0,
                    "start_at": None,
                    "end_at": None,
                    "messages": None,
                    "exit_code": None,
                    "sink_sessions": None,
                    "sink_quits": None,
                    "sink_messages": None,
                }
            return run

        for line_no, raw in lines:
            if L.full:
                yield L
                L = Ledger()
            line = raw.rstrip("\n")
            text = line.strip()
            if not text:
                L.add_noise(line_no, 0, "blank", line)
            elif m := STAMP.match(text):
                at = parse_iso_utc(m["at"])
                if m["what"] == "start" and run is not None:  # the run before is complete
                    _add_run(L, run)
                    run = None
                r = current(line_no)
                r[f"{m['what']}_at"] = at
                L.add(
                    "smtp_source_lines",
                    line_no,
                    0,
                    run_seq=r["run_seq"],
                    kind=m["what"],
                    event_at=at,
                    value=None,
                    n_values=None,
                    text=text,
                )
            elif m := EXIT.match(text):
                r = current(line_no)
                r["exit_code"] = int(m["code"])
                L.add(
                    "smtp_source_lines",
                    line_no,
                    0,
                    run_seq=r["run_seq"],
                    kind="exit",
                    event_at=None,
                    value=int(m["code"]),
                    n_values=None,
                    text=text,
                )
            elif COUNTER.match(line.strip("\n")) and line.strip():
                vals = [int(v) for v in line.split("\r") if v.strip()]
                r = current(line_no)
                r["messages"] = vals[-1]
                L.add(
                    "smtp_source_lines",
                    line_no,
                    0,
                    run_seq=r["run_seq"],
                    kind="counter",
                    event_at=None,
                    value=vals[-1],
                    n_values=len(vals),
                    text=None,
                )
            elif SINK.match(line):
                items = SINK_ITEM.findall(line)
                sess, quit_, mesg = (int(x) for x in items[-1])
                r = current(line_no)
                r.update(sink_sessions=sess, sink_quits=quit_, sink_messages=mesg)
                L.add(
                    "smtp_source_lines",
                    line_no,
                    0,
                    run_seq=r["run_seq"],
                    kind="sink_counter",
                    event_at=None,
                    value=mesg,
                    n_values=len(items),
                    text=None,
                )
            elif WRAPPER.match(text):
                L.add_noise(line_no, 0, "wrapper", line)
            else:
                L.add_quarantine(line_no, 0, "unrecognised line in smtp-source/smtp-sink output", line)
        if run is not None:
            _add_run(L, run)
        yield L


def _add_run(L: Ledger, r: dict) -> None:
    dur = (r["end_at"] - r["start_at"]).total_seconds() if r["start_at"] and r["end_at"] else None
    L.add_meta("smtp_source_runs", **r, duration_s=dur)
