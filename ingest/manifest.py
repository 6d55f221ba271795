"""run.toml: the manifest a recording script writes beside a run's raw files.

Accepts the keys the recorded runs use (run_id, start_utc, end_utc, monitor_*,
[tool], [mta], [mta.changed_settings], [notes], ...) plus optional label, tags,
[mta.previous_settings] (the values before the change, as `mtabench record` writes them),
timezone (IANA name or UTC offset), date, and the comparison keys group (the comparison group,
instead of folder + MTA + load tool + host) and baseline (a run id: compare with that run only).
Unknown keys are kept in `extra`.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
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

    def to_json(self) -> str:
        return json.dumps(asdict(self), default=str, ensure_ascii=False, sort_keys=True)


def parse_manifest(text: str) -> Manifest:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ManifestError(f"run.toml is not valid TOML: {exc}") from exc
    m = Manifest()
    m.run_id = _str(doc.get("run_id"))
    m.label = _str(doc.get("label"))
    tags = doc.get("tags", [])
    m.tags = [str(t) for t in tags] if isinstance(tags, list) else [str(tags)]
    m.timezone = str(doc.get("timezone") or "UTC")
    utc_offset_minutes(m.timezone, None)  # validate early
    if "date" in doc:
        d = doc["date"]
        m.date = d if isinstance(d, date) and not isinstance(d, datetime) else _parse_date(str(d))
    for key in ("start_utc", "end_utc", "monitor_start_utc", "monitor_end_utc", "queue_drained_utc"):
        if key in doc:
            setattr(m, key, _utc(doc[key], key))
    if "duration_s" in doc:
        m.duration_s = float(doc["duration_s"])
    if "load_exit_code" in doc:
        m.load_exit_code = int(doc["load_exit_code"])
    m.hostname = _str(doc.get("hostname"))
    m.group = _nonblank(doc.get("group"))
    m.baseline = _nonblank(doc.get("baseline"))
    m.tool = {k: str(v) for k, v in (doc.get("tool") or {}).items()}
    mta = dict(doc.get("mta") or {})
    changed = mta.pop("changed_settings", {}) or {}
    previous = mta.pop("previous_settings", {}) or {}
    m.mta = {k: str(v) for k, v in mta.items()}
    m.changed_settings = {k: str(v) for k, v in changed.items()}
    m.previous_settings = {k: str(v) for k, v in previous.items()}
    notes = doc.get("notes")
    m.notes = _str(notes.get("text")) if isinstance(notes, dict) else _str(notes)
    extra = {k: v for k, v in doc.items() if k not in KNOWN_TOP}
    if isinstance(notes, dict):
        extra.update({f"notes.{k}": v for k, v in notes.items() if k != "text"})
    m.extra = extra
    return m


def utc_offset_minutes(tz: str, at: datetime | None) -> int:
    """Offset of `tz` from UTC in minutes at instant `at` (now-independent: defaults to 2000-01-01)."""
    if m := OFFSET.match(tz.strip()):
        minutes = int(m["h"]) * 60 + int(m["m"] or 0)
        return minutes if m["sign"] == "+" else -minutes
    if tz.upper() in ("UTC", "Z", "GMT"):
        return 0
    try:
        zone = ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as exc:
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
