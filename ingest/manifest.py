"""run.toml: the manifest a recording script writes beside a run's raw files.

Accepts the keys the recorded runs use (run_id, start_utc, end_utc, monitor_*,
[tool], [mta], [mta.changed_settings], [notes], ...) plus optional label, tags,
[mta.previous_settings] (the values before the change, as `mtabench record` writes them),
timezone (IANA name or UTC offset), date, and the comparison keys group (the comparison group,
instead of folder + MTA + load tool + host) and baseline (a run id: compare with that run only).
Unknown keys are kept in `extra`. The file is untrusted input: a field of the wrong type or
value (`load_exit_code = [1]`, `tool = "postal"`) is left out and named in `problems`, e.g.
"run.toml: load_exit_code must be an integer, got a list"; the rest of the manifest counts.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

OFFSET = re.compile(r"^(?:UTC|GMT)?\s*(?P<sign>[+-])(?P<h>\d{1,2})(?::?(?P<m>\d{2}))?$", re.IGNORECASE)
KNOWN_TOP = {
    "run_id",
    "label",
    "tags",
    "timezone",
    "date",
    "start_utc",
    "end_utc",
    "monitor_start_utc",
    "monitor_end_utc",
    "queue_drained_utc",
    "duration_s",
    "load_exit_code",
    "hostname",
    "group",
    "baseline",
    "tool",
    "mta",
    "notes",
}


class ManifestError(ValueError):
    pass


@dataclass
class Manifest:
    run_id: str | None = None
    label: str | None = None
    tags: list[str] = field(default_factory=list)
    timezone: str = "UTC"
    date: date | None = None
    start_utc: datetime | None = None
    end_utc: datetime | None = None
    monitor_start_utc: datetime | None = None
    monitor_end_utc: datetime | None = None
    queue_drained_utc: datetime | None = None
    duration_s: float | None = None
    load_exit_code: int | None = None
    hostname: str | None = None
    group: str | None = None  # comparison group; None = the default (folder, MTA, tool, host)
    baseline: str | None = None  # run id this run is compared with, and only with
    tool: dict[str, str] = field(default_factory=dict)
    mta: dict[str, str] = field(default_factory=dict)
    changed_settings: dict[str, str] = field(default_factory=dict)
    previous_settings: dict[str, str] = field(default_factory=dict)
    notes: str | None = None
    extra: dict = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # fields left out: wrong type or value

    def to_json(self) -> str:
        doc = {k: v for k, v in asdict(self).items() if k != "problems"}
        return json.dumps(doc, default=str, ensure_ascii=False, sort_keys=True)


def parse_manifest(text: str) -> Manifest:
    """The manifest of `text`. Invalid TOML raises ManifestError; a field of the wrong type
    or value is left out and named in `problems` (the rest of the manifest still counts)."""
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"run.toml is not valid TOML: {exc}") from exc
    m = Manifest()
    fields = _Fields(doc, m.problems)
    m.run_id = fields.text("run_id")
    m.label = fields.text("label")
    m.tags = fields.tags("tags")
    m.timezone = fields.timezone("timezone") or "UTC"
    m.date = fields.day("date")
    for key in ("start_utc", "end_utc", "monitor_start_utc", "monitor_end_utc", "queue_drained_utc"):
        setattr(m, key, fields.instant(key))
    m.duration_s = fields.number("duration_s")
    m.load_exit_code = fields.integer("load_exit_code")
    m.hostname = fields.text("hostname")
    m.group = _nonblank(fields.text("group"))
    m.baseline = _nonblank(fields.text("baseline"))
    m.tool = fields.table("tool")
    mta = fields.table("mta", nested=("changed_settings", "previous_settings"))
    m.changed_settings = fields.table("mta.changed_settings", doc.get("mta"))
    m.previous_settings = fields.table("mta.previous_settings", doc.get("mta"))
    m.mta = mta
    notes = doc.get("notes")
    if isinstance(notes, dict):
        m.notes = fields.text("notes.text", notes.get("text"))
    else:
        m.notes = fields.text("notes")
    extra = {k: v for k, v in doc.items() if k not in KNOWN_TOP}
    if isinstance(notes, dict):
        extra.update({f"notes.{k}": v for k, v in notes.items() if k != "text"})
    m.extra = extra
    return m


def _kind(v: object) -> str:
    """What a TOML value is, as a user reads it in a message."""
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a float"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "a table"
    if isinstance(v, datetime):
        return "a date-time"
    if isinstance(v, date):
        return "a date"
    if isinstance(v, time):
        return "a time"
    return type(v).__name__


INT32 = (-(2**31), 2**31 - 1)  # raw.runs.load_exit_code is an INTEGER


class _Fields:
    """Typed reads of the manifest's fields: a value of the wrong type or out of range is
    dropped (None / empty) and the reason appended to `problems`."""

    def __init__(self, doc: dict, problems: list[str]) -> None:
        self.doc, self.problems = doc, problems

    def _get(self, key: str, parent: object) -> object:
        if parent is not None:
            return parent.get(key.rsplit(".", 1)[-1]) if isinstance(parent, dict) else None
        return self.doc.get(key)

    def bad(self, key: str, want: str, v: object) -> None:
        self.problems.append(f"run.toml: {key} must be {want}, got {_kind(v)}")

    def text(self, key: str, value: object = None) -> str | None:
        v = value if value is not None or "." in key else self.doc.get(key)
        if v is None:
            return None
        if isinstance(v, str):
            return v
        if isinstance(v, int | float) and not isinstance(v, bool):
            return str(v)  # run_id = 5: a number written without quotes
        self.bad(key, "a string", v)
        return None

    def tags(self, key: str) -> list[str]:
        v = self.doc.get(key)
        if v is None:
            return []
        if isinstance(v, str):
            return [v]
        if isinstance(v, list) and all(
            isinstance(t, str | int | float) and not isinstance(t, bool) for t in v
        ):
            return [str(t) for t in v]
        self.bad(key, "a string or a list of strings", v)
        return []

    def timezone(self, key: str) -> str | None:
        v = self.text(key)
        if v is None or not v.strip():
            return None
        try:
            utc_offset_minutes(v, None)
        except ManifestError as exc:
            self.problems.append(f"run.toml: {exc}; UTC assumed")
            return None
        return v

    def day(self, key: str) -> date | None:
        v = self.doc.get(key)
        if v is None:
            return None
        if isinstance(v, date) and not isinstance(v, datetime):
            return v
        if isinstance(v, str):
            try:
                return _parse_date(v)
            except ManifestError as exc:
                self.problems.append(f"run.toml: {exc}")
                return None
        self.bad(key, "a date (YYYY-MM-DD)", v)
        return None

    def instant(self, key: str) -> datetime | None:
        v = self.doc.get(key)
        if v is None:
            return None
        if not isinstance(v, datetime | str):
            self.bad(key, "a date-time (ISO 8601)", v)
            return None
        try:
            return _utc(v, key)
        except (ManifestError, OverflowError, ValueError) as exc:
            self.problems.append(f"run.toml: {exc}")
            return None

    def number(self, key: str) -> float | None:
        v = self.doc.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int | float):
            self.bad(key, "a number", v)
            return None
        f = float(v) if abs(v) < 1e300 else math.inf
        if not math.isfinite(f) or f < 0:
            self.problems.append(f"run.toml: {key} must be a finite number >= 0, got {v!r}")
            return None
        return f

    def integer(self, key: str) -> int | None:
        v = self.doc.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            self.bad(key, "an integer", v)
            return None
        if not INT32[0] <= v <= INT32[1]:
            self.problems.append(f"run.toml: {key} must be an integer in {INT32[0]}..{INT32[1]}, got {v}")
            return None
        return v

    def table(self, key: str, parent: object = None, nested: tuple[str, ...] = ()) -> dict[str, str]:
        """A table of plain values as text; `nested`: sub-tables read on their own."""
        v = self._get(key, parent)
        if v is None:
            return {}
        if not isinstance(v, dict):
            self.bad(key, "a table", v)
            return {}
        out = {}
        for k, item in v.items():
            if k in nested:
                continue
            if isinstance(item, dict | list):
                self.bad(f"{key}.{k}", "a string, number, boolean or date", item)
                continue
            out[k] = str(item)
        return out


def utc_offset_minutes(tz: str, at: datetime | None) -> int:
    """Offset of `tz` from UTC in minutes at instant `at` (now-independent: defaults to 2000-01-01)."""
    if m := OFFSET.match(tz.strip()):
        minutes = int(m["h"]) * 60 + int(m["m"] or 0)
        return minutes if m["sign"] == "+" else -minutes
    if tz.upper() in ("UTC", "Z", "GMT"):
        return 0
    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError) as exc:
        raise ManifestError(f"unknown timezone {tz!r} (use an IANA name or an offset like +08:00)") from exc
    at = at or datetime(2000, 1, 1, tzinfo=UTC)
    off = zone.utcoffset(at.astimezone(zone).replace(tzinfo=None))
    return int((off or timedelta(0)).total_seconds() // 60)


def _str(v: object) -> str | None:
    return None if v is None else str(v)


def _nonblank(v: object) -> str | None:
    """A comparison key as text; blank means unset (the default grouping), not a group named ''."""
    s = None if v is None else str(v).strip()
    return s or None


def _parse_date(s: str) -> date:
    try:
        return date.fromisoformat(s)
    except ValueError as exc:
        raise ManifestError(f"date {s!r} is not YYYY-MM-DD") from exc


def _utc(v: object, key: str) -> datetime:
    if isinstance(v, datetime):
        dt = v
    else:
        try:
            dt = datetime.fromisoformat(str(v).replace("Z", "+00:00"))
        except ValueError as exc:
            raise ManifestError(f"{key} = {v!r} is not an ISO 8601 timestamp") from exc
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).replace(tzinfo=None)
