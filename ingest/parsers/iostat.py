"""sysstat iostat output (`iostat -x`, with or without `-t`; text and `-o JSON`).

Reports: each report is an optional `-t` stamp line, an `avg-cpu:` block and a device
block. Columns are matched by name, so sysstat 9.x-11.x (`Device: rrqm/s wrqm/s r/s
w/s rkB/s wkB/s avgrq-sz avgqu-sz await r_await w_await svctm %util`), 11.5-12.1
(`... aqu-sz rareq-sz wareq-sz svctm %util`) and 12.2+ (`r/s rkB/s rrqm/s %rrqm
r_await rareq-sz w/s ... d/s ... f/s f_await aqu-sz %util`) all land; plain `iostat`
(tps, kB_read/s ...) too. A device header naming a column we do not know (a sysstat
version not seen before) quarantines the header and its rows with the reason.

Invocations: the `Linux ... (host) date _arch_ (N CPU)` banner (noise) starts a new
segment; its first report is the average since boot (`is_since_boot`) unless the
command line has `-y`, or the banner is followed by two blank lines (sysstat 12.6's `-y`
still ends the report it omits with its blank line; newer releases print nothing, so a file
without the command can only be told by this where it came from such a release).
`report_index` counts reports within a segment from 0.

Times: `-t` stamps in the forms locales give (`11/21/26 22:26:09`,
`05/31/2018 10:04:45 AM`, `21.11.2026 22:26:09`, ISO `2026-11-21T22:06:46+0000`);
stamps with an offset are converted with it, others are local time (minus
ctx.utc_offset_minutes); a time-only stamp takes the banner's date. Day/month order
follows the banner date when it is unambiguous, else month first unless the file
uses decimal commas. Without stamps, segment 1 gets ctx.monitor_start_utc (else start_utc) + report_index *
interval (interval from ctx.commands['iostat_command']). Decimal commas are read.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from ingest.ledger import Ledger
from ingest.parsers.base import ParseContext, Parser

BANNER = re.compile(
    r"^(?P<os>Linux|SunOS|FreeBSD|\w+)\s+\S+\s+\((?P<host>[^)]*)\)\s+(?P<date>\S+)\s+_?(?P<arch>[\w-]+?)_?\s+"
    r"\((?P<cpus>\d+)\s+CPU\)\s*$"
)
CPU_HEADER = re.compile(r"^avg-cpu:\s+(?P<cols>.*)$")
DEV_HEADER = re.compile(r"^(?P<dev>Device:?)\s+(?P<cols>\S.*)$")
NUMBER = re.compile(r"^-?\d+(?:[.,]\d+)?$")
STAMP = re.compile(
    r"^(?:(?P<iso>\d{4}-\d\d-\d\d)[T ](?P<isotime>\d\d:\d\d:\d\d)(?P<off>Z|[+-]\d\d:?\d\d)?"
    r"|(?:(?P<date>\d{1,2}[/.]\d{1,2}[/.]\d{2,4})\s+)?(?P<time>\d{1,2}:\d\d:\d\d)(?:\s*(?P<ampm>[AaPp]\.?[Mm]\.?))?)$"
)
JSON_START = re.compile(r'^\s*\{\s*"sysstat"')

CPU_COLS = {"%user": "user", "%nice": "nice", "%system": "system", "%sys": "system",
            "%iowait": "iowait", "%steal": "steal", "%idle": "idle"}  # fmt: skip
# device columns: sysstat name -> table column (None: kept in extra_json only)
DEV_COLS: dict[str, str | None] = {
    "r/s": "r_s", "w/s": "w_s", "rkB/s": "rkb_s", "wkB/s": "wkb_s",
    "rrqm/s": "rrqm_s", "wrqm/s": "wrqm_s", "r_await": "r_await", "w_await": "w_await",
    "await": "await", "aqu-sz": "aqu_sz", "avgqu-sz": "aqu_sz", "svctm": "svctm", "%util": "util",
    "tps": "tps",
    "rMB/s": None, "wMB/s": None, "rsec/s": None, "wsec/s": None, "d/s": None, "dkB/s": None,
    "dMB/s": None, "drqm/s": None, "%rrqm": None, "%wrqm": None, "%drqm": None, "d_await": None,
    "f/s": None, "f_await": None, "rareq-sz": None, "wareq-sz": None, "dareq-sz": None,
    "avgrq-sz": None, "kB_read/s": None, "kB_wrtn/s": None, "kB_dscd/s": None, "kB_read": None,
    "kB_wrtn": None, "kB_dscd": None, "MB_read/s": None, "MB_wrtn/s": None, "MB_dscd/s": None,
    "MB_read": None, "MB_wrtn": None, "MB_dscd": None, "Blk_read/s": None, "Blk_wrtn/s": None,
    "Blk_read": None, "Blk_wrtn": None,
}  # fmt: skip
TABLE_DEV = ("r_s", "w_s", "rkb_s", "wkb_s", "rrqm_s", "wrqm_s", "r_await", "w_await", "await",
             "aqu_sz", "svctm", "util", "tps")  # fmt: skip
UTC_NAMES = {"UTC", "GMT", "Z"}


@dataclass
class _Report:
    segment: int
    index: int
    stamp_text: str | None = None
    sampled_at: datetime | None = None
    has_cpu: bool = False
    has_devices: bool = False


@dataclass
class _State:
    segment: int = 0
    report: _Report | None = None
    next_index: int = 0
    banner_date: date | None = None
    dayfirst: bool | None = None
    dev_cols: list[str] | None = None
    dev_bad: str | None = None
    cpu_cols: list[str] | None = None
    layout: str | None = None
    last_stamp: datetime | None = None
    json_lines: list[tuple[int, str]] = field(default_factory=list)
    json_depth: int = 0
    # blank lines after the banner, until the first report: one, or two where `-y` omitted
    # the since-boot report but not its closing blank line (sysstat 12.6)
    gap_blanks: int | None = None
    omit_boot: bool = False


def _num(tok: str) -> float:
    return float(tok.replace(",", "."))


def _interval(command: str | None) -> float | None:
    if not command:
        return None
    toks = command.split()
    try:
        start = next(i for i, t in enumerate(toks) if t.rsplit("/", 1)[-1] == "iostat")
    except StopIteration:
        return None
    skip = False
    for t in toks[start + 1 :]:
        if skip:
            skip = False
            continue
        if t in ("-j", "-g", "-o", "-p", "-c"):  # -c: no arg in sysstat, but never numeric after it
            skip = t != "-c"
            continue
        if re.fullmatch(r"\d+", t):
            return float(t)
    return None


def _skips_boot(command: str | None) -> bool:
    return bool(command) and any(re.fullmatch(r"-[a-zA-Z]*y[a-zA-Z]*", t) for t in command.split())


def _layout_name(cols: list[str]) -> str:
    if "f_await" in cols or "d/s" in cols:
        return "sysstat12"
    if "aqu-sz" in cols:
        return "sysstat11.5"
    if "avgqu-sz" in cols:
        return "sysstat9-11"
    return "basic" if "tps" in cols else "other"


class IostatParser(Parser):
    format = "iostat"
    version = "1.1.0"
    tables = {
        "iostat_cpu": (
            "segment INTEGER, report_index INTEGER, sampled_at TIMESTAMP, stamp_text VARCHAR, "
            'is_since_boot BOOLEAN, "user" DOUBLE, nice DOUBLE, system DOUBLE, iowait DOUBLE, '
            "steal DOUBLE, idle DOUBLE"
        ),
        "iostat_devices": (
            "segment INTEGER, report_index INTEGER, sampled_at TIMESTAMP, stamp_text VARCHAR, "
            "is_since_boot BOOLEAN, layout VARCHAR, device VARCHAR, r_s DOUBLE, w_s DOUBLE, "
            "rkb_s DOUBLE, wkb_s DOUBLE, rrqm_s DOUBLE, wrqm_s DOUBLE, r_await DOUBLE, "
            "w_await DOUBLE, await DOUBLE, aqu_sz DOUBLE, svctm DOUBLE, util DOUBLE, tps DOUBLE, "
            "extra_json VARCHAR"
        ),
    }

    def sniff(self, head: str, name: str) -> int:
        has_cpu = re.search(r"^avg-cpu:\s+%user", head, re.M)
        has_dev = re.search(r"^Device:?\s+(?:r/s|rrqm/s|tps)\b", head, re.M)
        if has_cpu and has_dev:
            return 95
        if (
            JSON_START.search(head)
            and '"disk_device"' in head
            or BANNER.search(head)
            and (has_cpu or has_dev)
        ):
            return 90
        if has_cpu or has_dev:
            return 80
        return 0

    # -- parsing ----------------------------------------------------------------
    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        return IostatParser()._batches(lines, ctx)  # its own instance: the parse state lives on it

    def _batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        self.L = L = Ledger()
        self.ctx = ctx
        cmd = ctx.commands.get("iostat_command")
        self.interval = _interval(cmd)
        self.boot_first = not _skips_boot(cmd)
        stripped_lines = ((n, raw.rstrip("\r\n")) for n, raw in lines)
        head = list(itertools.islice(stripped_lines, 400))  # decimal commas: decided on the head
        self.decimal_comma = any(re.search(r"\s\d+,\d\d(?:\s|$)", t) for _, t in head)
        st = self.st = _State()
        expect_cpu_values = False
        for line_no, line in itertools.chain(head, stripped_lines):
            if L.full and not st.json_lines:  # a JSON document lands whole, when it closes
                yield L
                self.L = L = Ledger()
            stripped = line.strip()
            if st.json_lines or (JSON_START.match(line) and not st.json_lines):
                st.json_lines.append((line_no, line))
                st.json_depth += line.count("{") + line.count("[") - line.count("}") - line.count("]")
                if st.json_depth <= 0:
                    self._json_block()
                continue
            if not stripped:
                L.add_noise(line_no, 0, "blank", line)
                if st.gap_blanks is not None:
                    st.gap_blanks += 1
                st.dev_cols = None
                expect_cpu_values = False
                continue
            if m := BANNER.match(stripped):
                L.add_noise(line_no, 0, "banner", line)
                self._new_segment(m["date"])
                continue
            if st.gap_blanks is not None:
                st.omit_boot = st.gap_blanks >= 2
                st.gap_blanks = None
            if STAMP.match(stripped):
                L.add_noise(line_no, 0, "stamp", line)
                rep = self._new_report()
                rep.stamp_text = stripped
                rep.sampled_at = self._stamp(stripped)
                continue
            if m := CPU_HEADER.match(stripped):
                L.add_noise(line_no, 0, "cpu_header", line)
                rep = st.report
                if rep is None or rep.has_cpu or rep.has_devices:
                    rep = self._new_report()
                rep.has_cpu = True
                st.cpu_cols = m["cols"].split()
                expect_cpu_values = True
                continue
            if expect_cpu_values:
                expect_cpu_values = False
                self._cpu_row(line_no, line)
                continue
            if m := DEV_HEADER.match(stripped):
                cols = m["cols"].split()
                unknown = [c for c in cols if c not in DEV_COLS]
                rep = st.report
                if rep is None or rep.has_devices:
                    rep = self._new_report()
                rep.has_devices = True
                st.dev_cols = cols
                st.layout = _layout_name(cols)
                if unknown:
                    st.dev_bad = (
                        f"iostat device header has unknown columns {unknown} "
                        "(another sysstat release, or a layout this parser does not read: -s, -h, --pretty)"
                    )
                    L.add_quarantine(line_no, 0, st.dev_bad, line)
                else:
                    st.dev_bad = None
                    L.add_noise(line_no, 0, "device_header", line)
                continue
            if st.dev_cols is not None:
                if st.dev_bad:
                    L.add_quarantine(line_no, 0, st.dev_bad, line)
                else:
                    self._device_row(line_no, line)
                continue
            L.add_quarantine(line_no, 0, "unrecognised line in iostat output", line)
        if st.json_lines:  # unterminated JSON
            for n, t in st.json_lines:
                L.add_quarantine(n, 0, "unterminated iostat JSON document", t)
        yield L

    def _new_segment(self, banner_date: str | None) -> None:
        st = self.st
        st.segment += 1
        st.next_index = 0
        st.report = None
        st.dev_cols = None
        st.banner_date = self._date(banner_date) if banner_date else None
        st.gap_blanks, st.omit_boot = 0, False

    def _new_report(self) -> _Report:
        st = self.st
        if st.segment == 0:
            self._new_segment(None)
        st.report = _Report(st.segment, st.next_index)
        st.next_index += 1
        st.dev_cols = None
        return st.report

    def _common(self, rep: _Report) -> dict:
        sampled_at = rep.sampled_at
        if rep.stamp_text is None and rep.segment == 1 and self.ctx.sampler_start_utc and self.interval:
            sampled_at = self.ctx.sampler_start_utc + timedelta(seconds=rep.index * self.interval)
        return {
            "segment": rep.segment,
            "report_index": rep.index,
            "sampled_at": sampled_at,
            "stamp_text": rep.stamp_text,
            "is_since_boot": self.boot_first and rep.index == 0 and not self.st.omit_boot,
        }

    def _cpu_row(self, line_no: int, line: str) -> None:
        toks = line.split()
        cols = self.st.cpu_cols or []
        if len(toks) != len(cols) or not all(NUMBER.match(t) for t in toks):
            self.L.add_quarantine(
                line_no, 0, f"avg-cpu values do not match header ({len(cols)} columns)", line
            )
            return
        rec = dict.fromkeys(("user", "nice", "system", "iowait", "steal", "idle"))
        for c, t in zip(cols, toks, strict=True):
            if c in CPU_COLS:
                rec[CPU_COLS[c]] = _num(t)
        self.L.add("iostat_cpu", line_no, 0, **self._common(self.st.report), **rec)

    def _device_row(self, line_no: int, line: str) -> None:
        toks = line.split()
        cols = self.st.dev_cols or []
        if len(toks) != len(cols) + 1 or not all(NUMBER.match(t) for t in toks[1:]):
            self.L.add_quarantine(
                line_no, 0, f"iostat device row has {len(toks) - 1} values, header has {len(cols)}", line
            )
            return
        self._emit_device(line_no, 0, toks[0], {c: _num(t) for c, t in zip(cols, toks[1:], strict=True)})

    def _emit_device(self, line_no: int, item_no: int, device: str, values: dict[str, float]) -> None:
        rec: dict = dict.fromkeys(TABLE_DEV)
        extra = {}
        for c, v in values.items():
            col = DEV_COLS.get(c)
            if col:
                rec[col] = v
            else:
                extra[c] = v
        if rec["rkb_s"] is None:  # other units: normalise to kB/s
            if "rMB/s" in values:
                rec["rkb_s"], rec["wkb_s"] = values["rMB/s"] * 1024, values.get("wMB/s", 0) * 1024
            elif "rsec/s" in values:
                rec["rkb_s"], rec["wkb_s"] = values["rsec/s"] / 2, values.get("wsec/s", 0) / 2
            elif "kB_read/s" in values:
                rec["rkb_s"], rec["wkb_s"] = values["kB_read/s"], values.get("kB_wrtn/s")
        self.L.add(
            "iostat_devices",
            line_no,
            item_no,
            **self._common(self.st.report),
            layout=self.st.layout,
            device=device,
            **rec,
            extra_json=json.dumps(extra) if extra else None,
        )

    # -- JSON (-o JSON) ----------------------------------------------------------
    def _json_block(self) -> None:
        st, L = self.st, self.L
        block, st.json_lines, st.json_depth = st.json_lines, [], 0
        try:
            doc = json.loads("\n".join(t for _, t in block))
            hosts = doc["sysstat"]["hosts"]
        except (ValueError, KeyError, TypeError) as exc:
            for n, t in block:
                L.add_quarantine(n, 0, f"invalid iostat JSON: {exc}", t)
            return
        cpu_lines = [n for n, t in block if '"avg-cpu"' in t]
        dev_lines = [n for n, t in block if '"disk_device"' in t]
        ci = di = 0
        first = block[0][0]
        saved_layout = st.layout
        st.layout = "json"
        for host in hosts:
            self._new_segment(host.get("date"))
            for stat in host.get("statistics", []):
                rep = self._new_report()
                if ts := stat.get("timestamp"):
                    rep.stamp_text = str(ts)
                    rep.sampled_at = self._stamp(str(ts))
                if cpu := stat.get("avg-cpu"):
                    n = cpu_lines[ci] if ci < len(cpu_lines) else first
                    ci += 1
                    rec = {k: cpu.get(k) for k in ("user", "nice", "system", "iowait", "steal", "idle")}
                    L.add("iostat_cpu", n, ci, **self._common(rep), **rec)
                for disk in stat.get("disk", []):
                    n = dev_lines[di] if di < len(dev_lines) else first
                    di += 1
                    values = {}
                    for k, v in disk.items():
                        if k == "disk_device":
                            continue
                        values[k if k in DEV_COLS or f"%{k}" not in DEV_COLS else f"%{k}"] = v
                    self._emit_device(n, di, disk.get("disk_device"), values)
        st.layout = saved_layout
        for n, t in block:
            if n not in L.status:
                L.add_noise(n, 0, "json", t)

    # -- time ---------------------------------------------------------------------
    def _date(self, text: str) -> date | None:
        m = re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)", text)
        if m:
            return date(int(m[1]), int(m[2]), int(m[3]))
        m = re.fullmatch(r"(\d{1,2})([/.])(\d{1,2})[/.](\d{2,4})", text)
        if not m:
            return None
        a, sep, b, y = int(m[1]), m[2], int(m[3]), int(m[4])
        y = y + 2000 if y < 100 else y
        if self.st.dayfirst is None:
            if a > 12:
                self.st.dayfirst = True
            elif b > 12:
                self.st.dayfirst = False
            else:
                self.st.dayfirst = sep == "." or self.decimal_comma
        d, mo = (a, b) if self.st.dayfirst else (b, a)
        try:
            return date(y, mo, d)
        except ValueError:
            return None

    def _stamp(self, text: str) -> datetime | None:
        m = STAMP.match(text.strip())
        if not m:
            return None
        if m["iso"]:
            local = datetime.strptime(f"{m['iso']} {m['isotime']}", "%Y-%m-%d %H:%M:%S")
            off = m["off"]
            if off:
                if off == "Z":
                    return local
                sign = -1 if off[0] == "-" else 1
                hh, mm = int(off[1:3]), int(off[-2:])
                return local - sign * timedelta(hours=hh, minutes=mm)
            return local - timedelta(minutes=self.ctx.utc_offset_minutes)
        day = self._date(m["date"]) if m["date"] else None
        h, mi, s = (int(x) for x in m["time"].split(":"))
        if m["ampm"]:
            pm = m["ampm"][0] in "Pp"
            h = (h % 12) + (12 if pm else 0)
        if day is None:  # time only: the banner's date, rolling over at midnight
            base = self.st.banner_date or self.ctx.run_date
            if base is None:
                return None
            local = datetime.combine(base, datetime.min.time()).replace(hour=h, minute=mi, second=s)
            if self.st.last_stamp and local < self.st.last_stamp - timedelta(hours=1):
                local += timedelta(days=1)
        else:
            local = datetime(day.year, day.month, day.day, h, mi, s)
        self.st.last_stamp = local
        return local - timedelta(minutes=self.ctx.utc_offset_minutes)
