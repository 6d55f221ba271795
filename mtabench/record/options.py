"""What one `mtabench record` invocation asks for."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

PARAM = re.compile(r"^[a-z][a-z0-9_]*$")  # Postfix main.cf parameter names (service.param not supported)
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class OptionError(ValueError):
    pass


@dataclass
class RecordOptions:
    run_id: str
    load: list[str]
    archive: Path = Path("archive")
    duration_s: float = 60.0
    drain_s: float = 60.0
    settings: dict[str, str] = field(default_factory=dict)
    label: str | None = None
    tags: list[str] = field(default_factory=list)
    notes: str | None = None
    maillog: Path = Path("/srv/bench/log/maillog")
    log2: Path | None = None
    also: list[list[str]] = field(default_factory=list)  # more load commands run beside the first (rabid)
    allow_remote: bool = False
    interval_s: int = 5  # vmstat/iostat/queue sampling interval, as the samples were recorded
    spool: Path = Path("/var/spool/postfix")

    @property
    def run_dir(self) -> Path:
        return self.archive / self.run_id

    def check(self) -> None:
        if not RUN_ID.match(self.run_id):
            raise OptionError(f"run id {self.run_id!r}: use letters, digits, '.', '_' or '-'")
        if not self.load:
            raise OptionError("no load command: give it after --, e.g. -- postal -t 5 127.0.0.1 users.txt")
        if any(not cmd for cmd in self.also):
            raise OptionError("--also needs a command, e.g. --also 'rabid -r 600 127.0.0.1 users.txt'")
        if self.duration_s <= 0 or self.drain_s < 0:
            raise OptionError("--duration must be > 0 and --drain >= 0")


def parse_settings(items: list[str]) -> dict[str, str]:
    """`param=value` strings (from --set) into an ordered dict; values may contain '=' and spaces."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not PARAM.match(name):
            raise OptionError(f"--set {item!r}: expected param=value with a main.cf parameter name")
        out[name] = value.strip()
    return out
