"""vmstat output: Linux procps-ng (default, -t, -w, -n, -a), FreeBSD and Solaris layouts.

One `vmstat_samples` row per data line. Columns are found by name from the column
header line, so `-w`'s `gu`, `-a`'s `inact/active` and the BSD/Solaris disk columns
(between `sr` and `in`, named per machine) all land; disk columns go to `disks_json`,
columns without a table column to `extra_json`.

Invocations: a file may hold several vmstat runs (pasted or appended). A header after
a blank line, or a header whose columns differ from the current one, starts a new
`segment`; a header repeated by vmstat itself (identical, no blank line before it)
does not. The first data row of each segment is the average since boot
(`is_since_boot`); `sample_index` counts rows within the segment from 0.

Times: `-t` stamps are local time in the zone named under the header (UTC/GMT kept;
other zones shifted by ctx.utc_offset_minutes). Without `-t`, segment 1 gets
ctx.monitor_start_utc (else start_utc) + sample_index * interval, the interval read from
ctx.commands['vmstat_command'] (or a `vmstat ...` command line in the file); otherwise
sampled_at stays NULL.

Units: memory and swap columns land in KiB. The output does not say which `-S` unit it was
printed in, so the command (the manifest's vmstat_command or a command line in the file)
does: `-S k|m|M` values are converted (procps' unitConvert), the unit kept in extra_json.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cache, cached_property

from ingest.ledger import Ledger
from ingest.parsers.base import ParseContext, Parser

GROUP_HEADER = re.compile(r"^\s*(?:-*procs-*\s+-*memory|kthr\s+memory)", re.I)
COMMAND = re.compile(r"^(?:.*[$#>]\s*)?(?P<cmd>vmstat(?:\s+.*)?)$")
NUM = re.compile(r"^-?\d+(?:\.\d+)?$")
HUMAN = re.compile(r"^(?P<num>\d+(?:\.\d+)?)(?P<unit>[KMGTP])$")
STAMP_DATE = re.compile(r"^\d{4}-\d\d-\d\d$")
STAMP_TIME = re.compile(r"^\d\d:\d\d:\d\d$")

PROCPS_COLS = {
    "r", "b", "swpd", "free", "buff", "cache", "inact", "active", "si", "so", "bi", "bo",
    "in", "cs", "us", "sy", "id", "wa", "st", "gu",
}  # fmt: skip
# table columns filled straight from a same-named vmstat column (procps)
DIRECT = ("r", "b", "w", "swpd", "free", "buff", "cache", "si", "so", "bi", "bo", "in", "cs",
          "us", "sy", "id", "wa", "st", "gu")  # fmt: skip
BSD_MEMORY = {"avm", "fre", "swap", "free"}  # FreeBSD may print these humanized (514M, 15G)
UNITS_KIB = {"K": 1, "M": 1024, "G": 1024**2, "T": 1024**3, "P": 1024**4}
UTC_NAMES = {"UTC", "GMT", "Z", "UCT", "ZULU"}


@dataclass
class _Layout:
    kind: str  # procps | freebsd | solaris
    names: list[str]  # field names in order; 'timestamp' takes two tokens (date, time)
    zone: str | None = None
    disks: list[str] = field(default_factory=list)

    @property
    def n_tokens(self) -> int:
        return len(self.names) + (1 if "timestamp" in self.names else 0)

    @cached_property
    def slots(self) -> list[tuple[str, str, str]]:
        """(field name, where its value goes: out | disk | extra | timestamp, the key there),
        decided once per header rather than per row."""
        procps = self.kind == "procps"
        plan = []
        for name in self.names:
            if name == "timestamp":
                plan.append((name, "timestamp", name))
            elif name.startswith("disk:"):
                plan.append((name, "disk", name[5:]))
            elif name in DIRECT if procps else name in ("r", "b", "w", "in", "cs", "us", "sy", "id"):
                plan.append((name, "out", name))
            elif not procps and name == "fre" or self.kind == "solaris" and name == "free":
                plan.append((name, "out", "free"))
            else:
                plan.append((name, "extra", name))
        return plan


def _layout(tokens: list[str], group_kind: str | None) -> _Layout | None:
    """Column header tokens -> layout, or None if this is not a vmstat column header."""
    if len(tokens) < 4 or tokens[0] != "r" or tokens[1] != "b":
        return None
    if "sr" in tokens and "in" in tokens[tokens.index("sr") :]:
        # BSD-style: ... sr <disks> in sy cs us sy id
        kind = "solaris" if ("swap" in tokens or "mf" in tokens or group_kind == "solaris") else "freebsd"
        i_sr = tokens.index("sr")
        i_in = tokens.index("in", i_sr)
        disks = tokens[i_sr + 1 : i_in]
        names = tokens[: i_sr + 1] + [f"disk:{d}" for d in disks]
        rest = tokens[i_in:]
        # faults: in sy cs ; cpu: us sy id
        seen_sy = False
        for t in rest:
            if t == "sy" and not seen_sy and "cs" in rest[rest.index(t) :]:
                names.append("syscalls")
                seen_sy = True
            else:
                names.append(t)
        return _Layout(kind, names, disks=disks)
    names = list(tokens)
    zone = None
    if names[-1] not in PROCPS_COLS:  # -t: the zone name sits under the timestamp
        zone = names.pop()
        names.append("timestamp")
    if not all(n in PROCPS_COLS or n == "timestamp" for n in names):
        return None
    return _Layout("procps", names, zone=zone)


@cache
def _interval(command: str | None) -> float | None:
    if not command:
        return None
    toks = command.split()
    try:
        start = next(i for i, t in enumerate(toks) if t.rsplit("/", 1)[-1] == "vmstat")
    except StopIteration:
        return None
    skip_next = False
    for t in toks[start + 1 :]:
        if skip_next:
            skip_next = False
            continue
        if t in ("-S", "-p", "-M", "-N", "-c", "--unit", "--partition"):
            skip_next = True
            continue
        if re.fullmatch(r"\d+", t):
            return float(t)
    return None


# `-S k|K|m|M` (`--unit`): procps prints swpd, free, buff, cache (inact, active with -a) and
# si/so in units of 1000, 1024, 10^6 or 2^20 bytes (vmstat.c unitConvert); they land in KiB
UNIT_BYTES = {"k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2}
UNIT_COLS = ("swpd", "free", "buff", "cache", "si", "so")
UNIT_EXTRA = ("inact", "active")


@cache
def _unit(command: str | None) -> str | None:
    """The `-S` unit a vmstat command line names (None: KiB, vmstat's default)."""
    if not command:
        return None
    toks = command.split()
    for i, t in enumerate(toks):
        if t in ("-S", "--unit") and i + 1 < len(toks):
            u = toks[i + 1]
        elif t.startswith("--unit="):
            u = t[7:]
        elif t.startswith("-S") and len(t) > 2:
            u = t[2:]
        else:
            continue
        return u if u in UNIT_BYTES else None
    return None


def _value(name: str, tok: str, kind: str) -> float | int | None:
    if tok.isascii() and tok.isdigit():  # most fields: what NUM would take as an int
        return int(tok)
    if NUM.match(tok):
        return float(tok) if "." in tok else int(tok)
    m = HUMAN.match(tok)
    if m and kind != "procps" and name in BSD_MEMORY:
        return round(float(m["num"]) * UNITS_KIB[m["unit"]])  # KiB, as the unhumanized columns
    raise ValueError(tok)


class VmstatParser(Parser):
    format = "vmstat"
    version = "1.1.0"
    tables = {
        "vmstat_samples": (
            "segment INTEGER, sample_index INTEGER, sampled_at TIMESTAMP, stamp_text VARCHAR, "
            "stamp_zone VARCHAR, interval_s DOUBLE, is_since_boot BOOLEAN, layout VARCHAR, "
            "r BIGINT, b BIGINT, w BIGINT, swpd BIGINT, free BIGINT, buff BIGINT, cache BIGINT, "
            'si BIGINT, so BIGINT, bi BIGINT, bo BIGINT, "in" BIGINT, cs BIGINT, us INTEGER, '
            "sy INTEGER, id INTEGER, wa INTEGER, st INTEGER, gu INTEGER, disks_json VARCHAR, "
            "extra_json VARCHAR"
        ),
    }

    def sniff(self, head: str, name: str) -> int:
        lines = head.splitlines()[:60]
        group = any(GROUP_HEADER.match(ln) for ln in lines)
        cols = any(_layout(ln.split(), None) for ln in lines)
        if group and cols:
            return 95
        if cols:
            return 85
        return 20 if "vmstat" in name.lower() and group else 0

    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        L = Ledger()
        layout: _Layout | None = None
        group_kind: str | None = None
        segment = 0
        index = -1
        blank_before = False
        new_pending = True
        file_command: str | None = None
        for line_no, raw in lines:
            if L.full:  # every line before this one is final: the header state carries on
                yield L
                L = Ledger()
            line = raw.rstrip("\r\n")
            toks = line.split()
            if not toks:
                L.add_noise(line_no, 0, "blank", line)
                blank_before = True
                continue
            if GROUP_HEADER.match(line):
                group_kind = "solaris" if toks[0] == "kthr" else None
                L.add_noise(line_no, 0, "group_header", line)
                if blank_before:
                    new_pending = True
                blank_before = False
                continue
            if "vmstat" in line and (m := COMMAND.match(line.strip())) and not NUM.match(toks[0]):
                file_command = m["cmd"]
                L.add_noise(line_no, 0, "command", line)
                new_pending = True
                blank_before = False
                continue
            lay = _layout(toks, group_kind)
            if lay is not None:
                if layout is None or blank_before or lay.names != layout.names or lay.zone != layout.zone:
                    new_pending = True
                layout = lay
                L.add_noise(line_no, 0, "header", line)
                blank_before = False
                continue
            blank_before = False
            if layout is None:
                L.add_quarantine(line_no, 0, "vmstat data row before any column header", line)
                continue
            if len(toks) != layout.n_tokens:
                L.add_quarantine(
                    line_no, 0, f"vmstat row has {len(toks)} fields, header has {layout.n_tokens}", line
                )
                continue
            unit = _unit(file_command) or _unit(ctx.commands.get("vmstat_command"))
            try:
                rec = self._record(layout, toks, unit if unit != "K" and layout.kind == "procps" else None)
            except ValueError as exc:
                L.add_quarantine(line_no, 0, f"non-numeric vmstat field {exc.args[0]!r}", line)
                continue
            if new_pending:
                segment += 1
                index = -1
                new_pending = False
            index += 1
            interval = _interval(file_command) or _interval(ctx.commands.get("vmstat_command"))

            stamp_text = rec.pop("_stamp", None)
            sampled_at = None
            if stamp_text:
                sampled_at = _stamp_utc(stamp_text, layout.zone, ctx)
            elif segment == 1 and ctx.sampler_start_utc is not None and interval:
                sampled_at = ctx.sampler_start_utc + timedelta(seconds=index * interval)
            L.add(
                "vmstat_samples",
                line_no,
                0,
                segment=segment,
                sample_index=index,
                sampled_at=sampled_at,
                stamp_text=stamp_text,
                stamp_zone=layout.zone,
                interval_s=interval,
                is_since_boot=index == 0,
                layout=layout.kind,
                **rec,
            )
        yield L

    @staticmethod
    def _record(layout: _Layout, toks: list[str], unit: str | None = None) -> dict:
        """One data row's fields; `unit`: the `-S` unit its memory columns were printed in,
        turned back into KiB (the unit kept in extra_json)."""
        out: dict = dict.fromkeys(DIRECT)
        disks: dict[str, float | int] = {}
        extra: dict[str, float | int] = {}
        pos = 0
        for name, slot, key in layout.slots:
            if slot == "timestamp":
                date, time = toks[pos], toks[pos + 1]
                pos += 2
                if not (STAMP_DATE.match(date) and STAMP_TIME.match(time)):
                    raise ValueError(f"{date} {time}")
                out["_stamp"] = f"{date} {time}"
                continue
            tok = toks[pos]
            pos += 1
            val = _value(name, tok, layout.kind)
            if slot == "out":
                out[key] = val
            elif slot == "disk":
                disks[key] = val
            else:
                extra[key] = val
        if unit:
            f = UNIT_BYTES[unit] / 1024
            for c in UNIT_COLS:
                if isinstance(out[c], int | float):
                    out[c] = round(out[c] * f)
            for c in UNIT_EXTRA:
                if isinstance(extra.get(c), int | float):
                    extra[c] = round(extra[c] * f)
            extra["unit"] = unit
        out["disks_json"] = json.dumps(disks) if disks else None
        out["extra_json"] = json.dumps(extra) if extra else None
        return out


def _stamp_utc(text: str, zone: str | None, ctx: ParseContext) -> datetime | None:
    try:
        local = datetime.fromisoformat(text)  # `YYYY-MM-DD HH:MM:SS` (STAMP_DATE, STAMP_TIME): fast
    except ValueError:
        try:  # strptime also reads non-ASCII digits, which the stamp patterns let through
            local = datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            return None
    if zone and zone.upper() in UTC_NAMES:
        return local
    return local - timedelta(minutes=ctx.utc_offset_minutes)
