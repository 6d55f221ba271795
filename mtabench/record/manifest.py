"""run.toml as `mtabench record` writes it: the keys ingest/manifest.py reads, plus context in extra keys."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


def _s(v: object) -> str:
    return json.dumps(str(v), ensure_ascii=False)  # a JSON string is a valid TOML basic string


def _key(k: str) -> str:
    return k if k.replace("_", "").replace("-", "").isalnum() else _s(k)


@dataclass
class RunRecord:
    run_id: str
    hostname: str
    kernel: str
    cpus: int
    start_utc: str | None = None
    end_utc: str | None = None
    duration_s: float | None = None
    load_exit_code: int | None = None
    monitor_start_utc: str | None = None
    monitor_end_utc: str | None = None
    queue_drained_utc: str | None = None
    queue_left_at_stop: str | None = None
    maillog_window: str | None = None
    log2_window: str | None = None
    label: str | None = None
    tags: list[str] = field(default_factory=list)
    incomplete_reason: str | None = None
    tool: dict[str, str] = field(default_factory=dict)
    mta: dict[str, str] = field(default_factory=dict)
    also: list[dict[str, str]] = field(default_factory=list)  # --also commands, as [[also]] tables
    changed: dict[str, str] = field(default_factory=dict)
    previous: dict[str, str] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    notes: str | None = None

    def to_toml(self) -> str:
        out = [f"run_id = {_s(self.run_id)}"]
        if self.label is not None:
            out.append(f"label = {_s(self.label)}")
        out.append("tags = [" + ", ".join(_s(t) for t in self.tags) + "]")
        out.append(f"hostname = {_s(self.hostname)}")
        out.append(f"kernel = {_s(self.kernel)}")
        out.append(f"cpus = {self.cpus}")
        out.append(f"incomplete = {'true' if self.incomplete_reason else 'false'}")
        if self.incomplete_reason:
            out.append(f"incomplete_reason = {_s(self.incomplete_reason)}")
        stamps = [
            ("start_utc", self.start_utc, "load generator started"),
            ("end_utc", self.end_utc, "load generator exited"),
            ("monitor_start_utc", self.monitor_start_utc, "vmstat/iostat/queue samplers started"),
            ("monitor_end_utc", self.monitor_end_utc, "samplers stopped"),
            ("queue_drained_utc", self.queue_drained_utc, "incoming+active+maildrop empty, or drain limit"),
        ]
        for key, v, why in stamps:
            if v is not None:
                out.append(f"{key} = {_s(v)}  # {why}")
        if self.duration_s is not None:
            out.append(f"duration_s = {self.duration_s:.1f}")
        if self.load_exit_code is not None:
            out.append(f"load_exit_code = {self.load_exit_code}  # 128+N: stopped by signal N at --duration")
        for key in ("queue_left_at_stop", "maillog_window", "log2_window"):
            if (v := getattr(self, key)) is not None:
                out.append(f"{key} = {_s(v)}")
        out += ["", "[tool]"] + [f"{_key(k)} = {_s(v)}" for k, v in self.tool.items()]
        for entry in self.also:
            out += ["", "[[also]]"] + [f"{_key(k)} = {_s(v)}" for k, v in entry.items()]
        out += ["", "[mta]"] + [f"{_key(k)} = {_s(v)}" for k, v in self.mta.items()]
        out += ["", "[mta.changed_settings]"]
        out += [f"{_key(k)} = {_s(v)}  # was {_s(self.previous.get(k, ''))}" for k, v in self.changed.items()]
        out += ["", "[mta.previous_settings]"] + [f"{_key(k)} = {_s(v)}" for k, v in self.previous.items()]
        out += ["", "[recorder]", f"command = {_s('mtabench record')}"]
        out.append("pids = { " + ", ".join(f"{_key(k)} = {v}" for k, v in self.pids.items()) + " }")
        out += ["", "[notes]", f"text = {_s(self.notes or '')}", ""]
        return "\n".join(out)

    def write(self, run_dir: Path) -> Path:
        path = run_dir / "run.toml"
        tmp = path.with_suffix(".toml.tmp")
        tmp.write_text(self.to_toml(), encoding="utf-8")
        tmp.replace(path)
        return path
