"""Fuzzing every format through `mtabench parse` and through ingest; shared by the CI test
(tests/test_fuzz.py, bounded) and bench/fuzz.py (runs for N minutes).

Generic over the parser registry: a format added to PARSERS is fuzzed with no change here.
Inputs are arbitrary bytes, and real sample lines of that format with hostile mutations
(huge numbers, impossible dates, NUL and control bytes, truncation, duplication).
A case passes when nothing crashes (bad input is refused with a message, never a
traceback), `parse` prints one strict-JSON object per line, and ingest lands every line:
the distinct line numbers in the landed tables are exactly 1..lines_total, and
lines_total is the file's newline count.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]
SEED_DIRS = (REPO / "samples", REPO / "tests" / "fixtures")
HOSTILE = [
    "1100000000000",
    "99999999999999999999",
    "-99999999999999999999",
    "9" * 4400,
    "2026-02-30",
    "2026-13-01T25:61:61Z",
    "Feb 30 25:61:61",
    "\x00",
    "\x01\x02",
    "1e999",
    "-inf",
    "nan",
    "",
    " ",
    "{",
    "}",
    "[",
    '"',
    "\\",
    "\r",
    "0x1f",
    "-0",
    "١٢٣",  # Arabic-Indic digits: str.isdigit() is true, int() accepts them
]


@cache
def seed_lines() -> dict[str, list[list[bytes]]]:
    """Format -> sample files (first 300 lines each) that detection assigns to it."""
    from ingest.detect import detect
    from ingest.parsers import PARSERS
    from ingest.source import FileSource, split_lines

    out: dict[str, list[list[bytes]]] = {fmt: [] for fmt in PARSERS}
    for root in SEED_DIRS:
        for p in sorted(root.rglob("*")):
            if not p.is_file() or p.name == "run.toml":
                continue
            src = FileSource(p, p.name)
            try:
                fmt = detect(src).format
                data = src.data()
            except Exception:  # noqa: BLE001 - a seed we cannot read is just not a seed
                continue
            if fmt in out:
                out[fmt].append(split_lines(data)[:300])
    return out


@st.composite
def mutated(draw, fmt: str) -> bytes:
    """A real sample of `fmt` (or a synthetic line if none) with a few hostile edits."""
    files = seed_lines().get(fmt) or [[b"x"]]
    lines = list(draw(st.sampled_from(files))) or [b""]
    for _ in range(draw(st.integers(1, 4))):
        k = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["token", "token", "insert", "dup", "drop", "cut"]))
        line = lines[k]
        if op == "token":
            sep = b"," if b"," in line else b" "
            toks = line.split(sep)
            j = draw(st.integers(0, len(toks) - 1))
            new = draw(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12)))
            toks[j] = new.encode("utf-8", "surrogatepass")
            lines[k] = sep.join(toks)
        elif op == "insert":
            pos = draw(st.integers(0, len(line)))
            lines[k] = line[:pos] + draw(st.binary(min_size=1, max_size=4)) + line[pos:]
        elif op == "dup":
            lines.insert(k, line)
        elif op == "drop" and len(lines) > 1:
            del lines[k]
        elif op == "cut":
            lines[k] = line[: draw(st.integers(0, len(line)))]
    return b"\n".join(lines) + draw(st.sampled_from([b"\n", b""]))


def cases(fmt: str) -> st.SearchStrategy[bytes]:
    return st.one_of(st.binary(max_size=3000), mutated(fmt))


@dataclass
class Outcome:
    crashes: list[str] = field(default_factory=list)
    lost_lines: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.crashes and not self.lost_lines


def newline_count(data: bytes) -> int:
    """Lines as `wc -l` counts them, plus a last line without a newline (UTF-16 counted on
    its characters: the file is read as the text it is)."""
    from ingest.source import content_kind

    kind = content_kind(data[:65536])
    if kind.startswith("utf-16"):
        data = data.decode("utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else kind, "replace").encode()
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def check_parse(fmt: str, data: bytes, work: Path) -> Outcome:
    """`mtabench parse FMT FILE` in-process: exit 0 with one strict JSON object per line, or
    exit 2 with a message for input refused as a whole (binary, UTF-16 that does not decode)."""
    from mtabench.cli.main import main

    out = Outcome()
    path = work / "case.txt"
    path.write_bytes(data)
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            rc = main(["parse", fmt, str(path)])
    except Exception as exc:  # noqa: BLE001 - that is the finding
        out.crashes.append(f"parse {fmt}: {type(exc).__name__}: {exc}"[:500])
        return out
    if rc == 2 and stderr.getvalue():
        return out
    if rc != 0:
        out.crashes.append(f"parse {fmt}: exit {rc}: {stderr.getvalue()[:300]}")
        return out

    def refuse(const: str):
        raise ValueError(f"not JSON: {const}")

    try:
        objs = [json.loads(line, parse_constant=refuse) for line in stdout.getvalue().split("\n") if line]
    except ValueError as exc:
        out.crashes.append(f"parse {fmt}: invalid JSON: {exc}"[:300])
        return out
    if len(objs) != newline_count(data) or any(o["status"] is None for o in objs):
        missing = [o["line_no"] for o in objs if o["status"] is None][:5]
        out.lost_lines.append(
            f"parse {fmt}: {len(objs)} objects for {newline_count(data)} lines; no status: {missing}"
        )
    return out


FILE_NAMES = {
    "maillog": "maillog",
    "postal": "postal.csv",
    "vmstat": "vmstat.txt",
    "iostat": "iostat.txt",
    "queue_sizes": "queue.txt",
    "postconf": "postconf-n.txt",
    "smtp_source": "smtp-source.out",
    "dtrace": "dtrace.txt",
    "sample_series": "samples.txt",
}


def check_ingest(fmt: str, data: bytes, work: Path) -> Outcome:
    """Ingest a one-file run; the file lands (or is refused with a message), no line is lost."""
    import duckdb

    from ingest.accounting import landed_lines_sql
    from ingest.loader import ingest_archive

    out = Outcome()
    shutil.rmtree(work / "archive", ignore_errors=True)
    run = work / "archive" / "r"
    run.mkdir(parents=True)
    name = FILE_NAMES.get(fmt, f"{fmt}.txt")
    (run / name).write_bytes(data)
    db = work / "case.duckdb"
    db.unlink(missing_ok=True)
    try:
        report = ingest_archive(work / "archive", db, work / "work")
    except Exception as exc:  # noqa: BLE001 - that is the finding
        out.crashes.append(f"ingest {fmt}: {type(exc).__name__}: {exc}"[:500])
        return out
    for f in report.files:
        if f.status == "error" and not f.message:
            out.crashes.append(f"ingest {fmt}: {f.path} error without a message")
    with duckdb.connect(str(db), read_only=True) as con:
        cols = "path, lines_total, landed_lines, lost_lines, lines_beyond_end"
        sql = f"select {cols} from ({landed_lines_sql()})"
        for path, total, landed, lost, beyond in con.execute(sql).fetchall():
            expected = newline_count(data)
            if lost or beyond or total != expected:
                out.lost_lines.append(
                    f"ingest {fmt}: {path}: lines_total {total}, newline count {expected}, landed {landed}"
                )
    return out


@contextlib.contextmanager
def workdir():
    d = Path(tempfile.mkdtemp(prefix="mtabench-fuzz-"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


# --- run.toml: every field's type and value mutated; the run and the others still load ---

MANIFEST_SEED = REPO / "samples/runs/a-baseline-t5"
MANIFEST_RUN_FILES = ("postal.csv", "queue.txt", "postconf-n.txt", "vmstat.txt")


def _toml_value(v) -> str:
    """`v` written as TOML (strings as JSON, whose escapes TOML shares; a lone surrogate is
    invalid TOML, a case too)."""
    import math
    from datetime import date, datetime, time

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, datetime | date | time):
        return v.isoformat()
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_value(x)}" for k, x in v.items()) + "}"
    return json.dumps(v)


def toml_text(doc: dict) -> str:
    top = [f"{json.dumps(k)} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    tables = [
        f"[{json.dumps(k)}]\n" + "\n".join(f"{json.dumps(kk)} = {_toml_value(vv)}" for kk, vv in v.items())
        for k, v in doc.items()
        if isinstance(v, dict)
    ]
    return "\n".join(top) + "\n\n" + "\n\n".join(tables) + "\n"


def toml_values(depth: int = 2) -> st.SearchStrategy:
    scalars = st.one_of(
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**63 - 1),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from(HOSTILE),
        st.text(max_size=30),
        st.datetimes(),
        st.datetimes(timezones=st.timezones()),
        st.dates(),
        st.times(),
    )
    if depth == 0:
        return scalars
    inner = toml_values(depth - 1)
    return st.one_of(
        scalars,
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["name", "text", "version", "command", "x"]), inner, max_size=3),
    )


@st.composite
def manifest_cases(draw) -> bytes:
    """The sample's run.toml with fields (top-level and in its tables) given another type or
    value, removed, or added; or the file's bytes cut, or arbitrary bytes."""
    import tomllib

    seed = tomllib.loads((MANIFEST_SEED / "run.toml").read_text())
    kind = draw(st.sampled_from(["fields", "fields", "fields", "cut", "bytes"]))
    if kind == "bytes":
        return draw(st.binary(max_size=600))
    if kind == "cut":
        text = toml_text(seed).encode()
        return text[: draw(st.integers(0, len(text)))]
    from ingest.manifest import KNOWN_TOP

    paths = [(k,) for k in sorted(KNOWN_TOP)] + [
        (t, k) for t, v in seed.items() if isinstance(v, dict) for k in v
    ]
    paths += [("mta", "changed_settings", "x"), ("mta", "previous_settings", "x"), ("notes", "text")]
    doc = json.loads(json.dumps(seed, default=str))  # a deep copy (dates as text: valid too)
    for _ in range(draw(st.integers(1, 4))):
        path = draw(st.sampled_from(paths))
        node = doc
        for key in path[:-1]:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        if draw(st.integers(0, 5)) == 0:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = draw(toml_values())
    return toml_text(doc).encode("utf-8", "surrogatepass")


def check_manifest(doc: bytes, work: Path) -> Outcome:
    """Ingest a run whose run.toml is `doc` beside a run with the sample's own: nothing
    crashes, every data file of both runs lands, no line is lost, the good run keeps its id."""
    import duckdb

    from ingest.accounting import landed_lines_sql
    from ingest.loader import ingest_archive

    out = Outcome()
    shutil.rmtree(work / "archive", ignore_errors=True)
    for name, manifest in (("fuzzed", doc), ("good", (MANIFEST_SEED / "run.toml").read_bytes())):
        run = work / "archive" / name
        run.mkdir(parents=True)
        for f in MANIFEST_RUN_FILES:
            shutil.copyfile(MANIFEST_SEED / f, run / f)
        (run / "run.toml").write_bytes(manifest)
    db = work / "case.duckdb"
    db.unlink(missing_ok=True)
    try:
        report = ingest_archive(work / "archive", db, work / "work")
    except Exception as exc:  # noqa: BLE001 - that is the finding
        out.crashes.append(f"ingest manifest: {type(exc).__name__}: {exc}"[:500])
        return out
    for f in report.files:
        if not f.path.endswith("run.toml") and f.status != "loaded":
            out.crashes.append(f"ingest manifest: {f.path} {f.status}: {f.message}")
        if f.status == "error" and not f.message:
            out.crashes.append(f"ingest manifest: {f.path} error without a message")
    with duckdb.connect(str(db), read_only=True) as con:
        sql = f"select path, lost_lines, lines_beyond_end from ({landed_lines_sql()})"
        for path, lost, beyond in con.execute(sql).fetchall():
            if lost or beyond:
                out.lost_lines.append(f"ingest manifest: {path}: lost {lost}, beyond the end {beyond}")
        good = con.execute("select run_id from raw.runs where run_key = 'good'").fetchone()
    if good is None or not good[0].startswith("a-baseline-t5"):
        out.crashes.append(f"ingest manifest: the good run's id is {good}")
    return out
