"""DTrace and bpftrace printed output, and ministat-style sample files.

DTrace (`dtrace -s x.d`, with or without -q):
- `dtrace: script 'x.d' matched N probes` and other `dtrace: ...` messages: noise;
- `CPU ID FUNCTION:NAME` header (noise) and the per-firing lines under it: `dtrace_lines`
  kind 'probe' (cpu, probe id, probe, rest of the line);
- aggregations printed at exit / by printa: after a blank line, indented rows of keys
  and a trailing integer value -> `dtrace_aggregations` (keys_json; value = the last
  integer, values_json = the trailing run of integers, for printa of several
  aggregations; an integer key printed before the value cannot be told apart from a
  second value, so both are kept);
- quantize / lquantize / llquantize blocks (`value ---- Distribution ---- count`, rows
  `<value> |@@@  <count>`, lquantize's `< base` and `>= top`) -> `dtrace_histograms`,
  one row per bucket with [bucket_low, bucket_high) (NULL for an open end); an indented
  line right above the header is the aggregation key;
- anything else is the script's printf output -> `dtrace_lines` kind 'printf'.
bpftrace: `Attaching N probes...` (noise), `@name[k1, k2]: value`, `@name: value`,
`@name[...]: count N, average N, total N` -> `dtrace_aggregations`; `@name[...]:` followed
by `[lo, hi)  count |@@@|`, `[n]`, `(..., lo)` and `[hi, ...)` rows (K/M/G/T suffixes,
powers of 1024) -> `dtrace_histograms`. A histogram row without its header: quarantine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from ingest.ledger import Ledger
from ingest.parsers.base import ParseContext, Parser

INTERRUPT = re.compile(r"^\^C\s*$")
DTRACE_MSG = re.compile(r"^dtrace: (?P<msg>.*)$")
BPF_ATTACH = re.compile(r"^Attaching \d+ probes?\.\.\.\s*$|^Attached \d+ probes?\s*$")
PROBE_HEADER = re.compile(r"^\s*CPU\s+ID\s+FUNCTION:NAME\s*$")
PROBE_LINE = re.compile(r"^\s*(?P<cpu>\d+)\s+(?P<id>\d+)\s+(?P<probe>\S*:\S+)(?:\s+(?P<rest>.*))?$")
HIST_HEADER = re.compile(r"^\s*value\s+-+\s*Distribution\s*-+\s+count\s*$")
HIST_ROW = re.compile(r"^\s*(?P<op><|>=)?\s*(?P<value>-?\d+)\s+\|(?P<bar>[@ ]*)\s+(?P<count>-?\d+)\s*$")
BPF_AGG = re.compile(r"^@(?P<name>\w*)(?:\[(?P<keys>.*)\])?:\s*(?P<rest>.*?)\s*$")
BPF_STATS = re.compile(r"^count (?P<count>-?\d+), average (?P<average>-?\d+), total (?P<total>-?\d+)$")
BPF_BOUND = r"-?\d+(?:\.\d+)?[KMGTP]?|\.\.\."
BPF_ROW = re.compile(
    r"^(?P<open>[\[(])(?P<lo>" + BPF_BOUND + r")(?:,\s*(?P<hi>" + BPF_BOUND + r"))?[\])]\s+"
    r"(?P<count>\d+)\s+\|(?P<bar>[@ ]*)\|\s*$"
)
INT = re.compile(r"^-?\d+$")
AGG_ROW = re.compile(r"^(?P<key>\s*.*?)\s(?P<nums>-?\d+(?:\s+-?\d+)*)\s*$")
NUMBER = re.compile(r"^[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$")
SUFFIX = {"K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}


def _bound(tok: str | None) -> float | None:
    if tok is None or tok == "...":
        return None
    if tok[-1] in SUFFIX:
        return float(tok[:-1]) * SUFFIX[tok[-1]]
    return float(tok)


def _intish(tok: str) -> Any:
    return int(tok) if INT.match(tok) else tok


@dataclass
class _Item:
    line_no: int
    kind: str
    text: str
    data: dict


class DtraceParser(Parser):
    format = "dtrace"
    version = "1.0.0"
    tables = {
        "dtrace_lines": "kind VARCHAR, cpu INTEGER, probe_id BIGINT, probe VARCHAR, text VARCHAR",
        "dtrace_aggregations": (
            "block_index INTEGER, tool VARCHAR, agg_name VARCHAR, key_text VARCHAR, keys_json VARCHAR, "
            "value DOUBLE, values_json VARCHAR"
        ),
        "dtrace_histograms": (
            "block_index INTEGER, tool VARCHAR, kind VARCHAR, agg_name VARCHAR, key_text VARCHAR, "
            "bucket_index INTEGER, bucket_label VARCHAR, bucket_low DOUBLE, bucket_high DOUBLE, count BIGINT"
        ),
    }

    def sniff(self, head: str, name: str) -> int:
        if re.search(r"^dtrace: (?:script|description) .* matched \d+ probes?", head, re.M):
            return 95
        if re.search(HIST_HEADER.pattern, head, re.M):
            return 90
        if re.search(r"^Attaching \d+ probes?\.\.\.", head, re.M):
            return 90
        bpf = len(re.findall(r"^@\w*(?:\[.*\])?:", head, re.M))
        if bpf >= 2 or (bpf and re.search(BPF_ROW.pattern, head, re.M)):
            return 80
        return 20 if name.endswith((".d", ".bt")) or "dtrace" in name.lower() else 0

    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        return self._emit(self._classify((n, raw.rstrip("\r\n")) for n, raw in lines))

    # step 1: what each line is on its own
    def _classify(self, lines: Iterable[tuple[int, str]]) -> Iterator[_Item]:
        in_probe = False
        for n, line in lines:
            s = line.strip()
            if not s:
                yield _Item(n, "blank", line, {})
                continue
            if INTERRUPT.match(s):
                yield _Item(n, "interrupt", line, {})
            elif m := DTRACE_MSG.match(line):
                yield _Item(n, "dtrace_msg", line, {"msg": m["msg"]})
            elif BPF_ATTACH.match(s):
                yield _Item(n, "bpf_attach", line, {})
            elif PROBE_HEADER.match(line):
                in_probe = True
                yield _Item(n, "probe_header", line, {})
            elif in_probe and (m := PROBE_LINE.match(line)):
                yield _Item(n, "probe", line, m.groupdict())
            elif HIST_HEADER.match(line):
                yield _Item(n, "hist_header", line, {})
            elif m := HIST_ROW.match(line):
                yield _Item(n, "hist_row", line, m.groupdict())
            elif m := BPF_ROW.match(s):
                yield _Item(n, "bpf_row", line, m.groupdict())
            elif m := BPF_AGG.match(s):
                yield _Item(n, "bpf_agg", line, m.groupdict())
            elif line[:1].isspace() and INT.match(s.split()[-1]):
                yield _Item(n, "agg_row", line, {})
            else:
                yield _Item(n, "printf", line, {})

    # step 2: context (blocks, keys above histogram headers) and output, one item looked ahead
    def _emit(self, items: Iterator[_Item]) -> Iterator[Ledger]:
        L = Ledger()
        block = 0
        hist: dict | None = None  # current histogram block
        agg_block: int | None = None
        prev_kind = "blank"
        prev_text = ""
        nxt = next(items, None)
        while nxt is not None:
            it, nxt = nxt, next(items, None)
            # an indented line directly above a DTrace histogram header is its key
            if (
                nxt
                and nxt.kind == "hist_header"
                and it.kind in ("agg_row", "printf")
                and it.text[:1].isspace()
            ):
                it.kind = "hist_key"
            if hist is None and L.full:  # an open histogram's rows land when it closes
                yield L
                L = Ledger()
            n, kind = it.line_no, it.kind
            if kind not in ("hist_row", "bpf_row") and hist is not None:
                self._close_hist(L, hist)
                hist = None
            if kind != "agg_row":
                agg_block = None
            if kind == "blank":
                L.add_noise(n, 0, "blank", it.text)
            elif kind == "dtrace_msg":
                msg = it.data["msg"]
                sub = "banner" if re.match(r"(?:script|description) .* matched", msg) else "dtrace_message"
                L.add_noise(n, 0, sub, it.text)
            elif kind == "interrupt":
                L.add_noise(n, 0, "interrupt", it.text)
            elif kind == "bpf_attach":
                L.add_noise(n, 0, "banner", it.text)
            elif kind == "probe_header":
                L.add_noise(n, 0, "probe_header", it.text)
            elif kind == "probe":
                d = it.data
                L.add("dtrace_lines", n, 0, kind="probe", cpu=int(d["cpu"]), probe_id=int(d["id"]),
                      probe=d["probe"], text=d["rest"])  # fmt: skip
            elif kind == "printf":
                L.add("dtrace_lines", n, 0, kind="printf", cpu=None, probe_id=None, probe=None, text=it.text)
            elif kind == "hist_key":
                L.add_noise(n, 0, "histogram_key", it.text)
            elif kind == "hist_header":
                block += 1
                key = None
                if prev_kind == "hist_key":
                    key = prev_text
                hist = {"block": block, "tool": "dtrace", "name": None, "key": key, "rows": [], "kind": None}
                L.add_noise(n, 0, "histogram_header", it.text)
            elif kind == "bpf_agg":
                d = it.data
                keys = [k.strip() for k in d["keys"].split(",")] if d["keys"] else []
                if not d["rest"]:  # '@name[...]:' opens a bpftrace histogram
                    block += 1
                    hist = {"block": block, "tool": "bpftrace", "name": d["name"] or None,
                            "key": d["keys"], "rows": [], "kind": "hist"}  # fmt: skip
                    L.add_noise(n, 0, "histogram_header", it.text)
                else:
                    block += 1
                    rest = d["rest"]
                    value: float | None = None
                    values: Any = None
                    if m := BPF_STATS.match(rest):
                        values = {k: int(v) for k, v in m.groupdict().items()}
                    elif NUMBER.match(rest):
                        value = float(rest)
                    else:
                        L.add_quarantine(n, 0, "bpftrace map value is not a number", it.text)
                        prev_kind = kind
                        continue
                    L.add("dtrace_aggregations", n, 0, block_index=block, tool="bpftrace",
                          agg_name=d["name"] or None, key_text=d["keys"],
                          keys_json=json.dumps([_intish(k) for k in keys]) if keys else None,
                          value=value, values_json=json.dumps(values) if values else None)  # fmt: skip
            elif kind == "agg_row":
                if agg_block is None:
                    block += 1
                    agg_block = block
                m = AGG_ROW.match(it.text)
                assert m is not None  # classified by the same rule
                trailing = [int(t) for t in m["nums"].split()]
                key_text = m["key"].strip()
                if key_text:
                    keys: list[Any] = [_intish(k) for k in re.split(r"\s{2,}", key_text)]
                else:  # only integers: integer keys, then the value
                    keys, trailing = trailing[:-1], trailing[-1:]
                    key_text = " ".join(str(k) for k in keys)
                L.add("dtrace_aggregations", n, 0, block_index=agg_block, tool="dtrace", agg_name=None,
                      key_text=key_text or None, keys_json=json.dumps(keys) if keys else None,
                      value=float(trailing[-1]), values_json=json.dumps(trailing))  # fmt: skip
            elif kind in ("hist_row", "bpf_row"):
                if hist is None or (kind == "hist_row") != (hist["tool"] == "dtrace"):
                    L.add_quarantine(n, 0, "histogram row without a histogram header", it.text)
                else:
                    hist["rows"].append(it)
            prev_text = it.text.strip()
            prev_kind = kind
        if hist is not None:
            self._close_hist(L, hist)
        yield L

    def _close_hist(self, L: Ledger, hist: dict) -> None:
        rows = hist["rows"]
        if not rows:
            return
        buckets: list[dict] = []
        if hist["tool"] == "dtrace":
            plain = [int(r.data["value"]) for r in rows if not r.data["op"]]
            steps = {y - x for x, y in zip(plain, plain[1:], strict=False)}
            has_ops = any(r.data["op"] for r in rows)
            if not has_ops and all(v == 0 or abs(v) & (abs(v) - 1) == 0 for v in plain):
                kind = "quantize"
            elif len(steps) <= 1 and (len(plain) > 2 or has_ops):
                kind = "lquantize"
            else:
                kind = "llquantize"
            step = next(iter(steps)) if kind == "lquantize" and len(steps) == 1 else None
            for k, r in enumerate(rows):
                v = int(r.data["value"])
                op = r.data["op"]
                later = [int(x.data["value"]) for x in rows[k + 1 :]]
                hi: float | None
                if op == "<":
                    lo, hi = None, float(v)
                elif op == ">=":
                    lo, hi = float(v), None
                elif kind == "quantize":  # power-of-two buckets: ..., -2, -1, 0, 1, 2, 4, ...
                    nxt = 1 if v == 0 else (2 * v if v > 0 else (0 if v == -1 else v // 2))
                    lo, hi = float(v), float(nxt)
                elif step is not None:
                    lo, hi = float(v), float(v + step)
                    if later and later[0] < v + step:
                        hi = float(later[0])
                else:
                    lo, hi = float(v), float(later[0]) if later else None
                label = f"{op} {v}" if op else str(v)
                buckets.append({"label": label, "lo": lo, "hi": hi, "count": int(r.data["count"]), "row": r})
        else:
            kind = "hist"
            for r in rows:
                d = r.data
                lo, hi = _bound(d["lo"]), _bound(d["hi"])
                if d["hi"] is None:  # '[n]': a single value
                    hi = lo + 1 if lo is not None else None
                label = r.text.strip().split("]")[0].split(")")[0] + ("]" if d["open"] == "[" else ")")
                buckets.append({"label": label, "lo": lo, "hi": hi, "count": int(d["count"]), "row": r})
            if any(b["lo"] is not None and b["hi"] is not None and b["hi"] - b["lo"] > 1 for b in buckets):
                spans = {b["hi"] - b["lo"] for b in buckets if b["lo"] is not None and b["hi"] is not None}
                kind = "lhist" if len(spans) == 1 else "hist"
        for k, b in enumerate(buckets):
            L.add(
                "dtrace_histograms", b["row"].line_no, 0, block_index=hist["block"], tool=hist["tool"],
                kind=kind, agg_name=hist["name"], key_text=hist["key"], bucket_index=k,
                bucket_label=b["label"], bucket_low=b["lo"], bucket_high=b["hi"], count=b["count"],
            )  # fmt: skip


class SampleSeriesParser(Parser):
    """Files of one number per line (ministat's input, e.g. `queue-read.Priority`).

    The series is the file: dbt names it from raw.files.path. Blank lines and `#`
    comments are noise (ministat skips them too); anything else that is not a single
    number is quarantined.
    """

    format = "sample_series"
    version = "1.0.0"
    tables = {"sample_values": "seq INTEGER, value DOUBLE"}

    def sniff(self, head: str, name: str) -> int:
        # split on LF only: smtp-source's \r-separated counter is not a column of numbers
        lines = [ln.strip() for ln in head.split("\n")[:500]]
        lines = [ln for ln in lines if ln and not ln.startswith("#")]
        if len(lines) < 3:
            return 0
        nums = sum(1 for ln in lines if NUMBER.match(ln))
        if nums / len(lines) >= 0.9:
            return 75
        return 0

    def batches(self, lines: Iterable[tuple[int, str]], ctx: ParseContext) -> Iterator[Ledger]:
        L = Ledger()
        seq = 0
        for n, raw in lines:
            if L.full:
                yield L
                L = Ledger()
            s = raw.strip()
            if not s:
                L.add_noise(n, 0, "blank", raw)
            elif s.startswith("#"):
                L.add_noise(n, 0, "comment", raw)
            elif NUMBER.match(s):
                seq += 1
                L.add("sample_values", n, 0, seq=seq, value=float(s))
            else:
                L.add_quarantine(n, 0, "not a single number", raw)
        yield L
