"""Hostile input and unlucky operators: one bad line never stops a file, a run, or `parse`.

Expected line numbers come from the test's own edit of a real sample, never from our parsers.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from conftest import FIXTURES, SAMPLES, raw_line_count

from ingest import loader
from ingest.ledger import Ledger
from ingest.loader import ingest_archive
from ingest.parsers.base import ParseContext, Parser

MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]
BASE = SAMPLES / "runs/a-baseline-t5"


def _poison(path: Path, pick, replace) -> int:
    """Rewrite the first line `pick` accepts with `replace(line)`; returns its 1-based number."""
    lines = path.read_text().split("\n")
    k = next(i for i, ln in enumerate(lines) if pick(ln))
    lines[k] = replace(lines[k])
    path.write_text("\n".join(lines))
    return k + 1


def _poison_vmstat_sy(path: Path, value: str) -> int:
    header = next(ln.split() for ln in path.read_text().splitlines() if ln.split()[:2] == ["r", "b"])
    col = header.index("sy")
    seen = [0]

    def pick(ln: str) -> bool:
        if ln.split() and ln.split()[0].isdigit():
            seen[0] += 1
            return seen[0] == 5  # the fifth data row
        return False

    def replace(ln: str) -> str:
        toks = ln.split()
        toks[col] = value
        return " ".join(toks)

    return _poison(path, pick, replace)


def _quarantine(db: Path, path: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "select q.line_no, q.reason from raw.quarantine q join raw.files f using (file_id) "
            "where f.path = ? order by q.line_no",
            [path],
        ).fetchall()


def _file(db: Path, path: str) -> tuple:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "select status, lines_total, lines_parsed, lines_noise, lines_quarantined from raw.files "
            "where path = ?",
            [path],
        ).fetchone()


# 1. a value that does not fit its column quarantines the line; the file, run and archive load
def test_out_of_range_vmstat_value_quarantines_its_line_and_the_run_publishes(tmp_path, monkeypatch):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "a-good")
    shutil.copytree(BASE, archive / "z-poisoned")
    (archive / "z-poisoned/run.toml").write_text(
        (BASE / "run.toml").read_text().replace('run_id = "', 'run_id = "poisoned-', 1)
    )
    bad = _poison_vmstat_sy(archive / "z-poisoned/vmstat.txt", "1100000000000")
    monkeypatch.setenv("MTABENCH_DATA", str(tmp_path / "data"))
    serving = tmp_path / "serving.duckdb"
    monkeypatch.setenv("MTABENCH_SERVING_DB", str(serving))
    from mtabench.cli.main import main

    db = tmp_path / "t.duckdb"
    assert main(["run", str(archive), "--db", str(db)]) == 0
    assert serving.exists()
    q = _quarantine(db, "z-poisoned/vmstat.txt")
    assert [n for n, _ in q] == [bad]
    assert "1100000000000" in q[0][1] and "vmstat_samples.sy" in q[0][1] and "INTEGER" in q[0][1]
    total = raw_line_count(archive / "z-poisoned/vmstat.txt")
    status, lines_total, parsed, noise, quarantined = _file(db, "z-poisoned/vmstat.txt")
    assert (status, lines_total, quarantined) == ("loaded", total, 1)
    assert _file(db, "a-good/vmstat.txt")[2] == parsed + 1
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select count(*) from raw.runs").fetchone() == (2,)
        assert con.execute(
            "select count(*) from raw.vmstat_samples v join raw.files f using (file_id) "
            "where f.path = 'z-poisoned/vmstat.txt' and v.line_no = ?",
            [bad],
        ).fetchone() == (0,)


@pytest.mark.parametrize(
    ("name", "pick", "value", "column"),
    [
        (
            "queue.txt",
            lambda ln: ln.startswith("2026-11-21T22:05:21Z"),
            "99999999999999999999",
            "queue_samples",
        ),
        ("postal.csv", lambda ln: ln.startswith("22:07,"), "99999999999999999999", "postal_rows"),
    ],
)
def test_huge_numbers_in_other_formats_quarantine_the_line(tmp_path, name, pick, value, column):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "r")
    bad = _poison(archive / "r" / name, pick, lambda ln: ",".join(ln.split(",")[:-1] + [value]))
    db = tmp_path / "t.duckdb"
    ingest_archive(archive, db, tmp_path / "work")
    q = _quarantine(db, f"r/{name}")
    assert [n for n, reason in q if value in reason and f"{column}." in reason] == [bad]
    assert _file(db, f"r/{name}")[0] == "loaded"


def test_huge_smtp_source_counter_quarantines_its_line_and_the_run_summary_keeps_null(tmp_path):
    """The run summary row (smtp_source_runs) takes the last counter value: a counter that
    does not fit BIGINT is quarantined with its line and leaves the summary's messages NULL
    instead of failing the file's insert (found by bench/fuzz.py)."""
    archive = tmp_path / "archive"
    shutil.copytree(SAMPLES / "runs/e-smtp-source-s5", archive / "s")
    out = archive / "s" / "smtp-source.out"
    lines = out.read_bytes().split(b"\n")
    k = next(i for i, ln in enumerate(lines) if b"\r" in ln)  # the \r-separated counter line
    lines[k] = b"99999999999999999999"
    out.write_bytes(b"\n".join(lines))
    db = tmp_path / "t.duckdb"
    ingest_archive(archive, db, tmp_path / "work")
    q = _quarantine(db, "s/smtp-source.out")
    huge = [n for n, reason in q if "99999999999999999999" in reason and "smtp_source_lines." in reason]
    assert huge == [k + 1]
    assert _file(db, "s/smtp-source.out")[0] == "loaded"
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select messages, exit_code from raw.smtp_source_runs").fetchall() == [(None, 0)]


# 2. a per-line problem (an impossible date) quarantines the line, not the file
def test_impossible_date_in_queue_sizes_quarantines_one_line(tmp_path):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "r")
    path = archive / "r/queue.txt"
    rows = sum(1 for ln in path.read_text().splitlines() if ln[:1].isdigit())
    bad = _poison(path, lambda ln: ln.startswith("2026-11-21T22:05:21Z"), lambda ln: "2026-02-30" + ln[10:])
    db = tmp_path / "t.duckdb"
    ingest_archive(archive, db, tmp_path / "work")
    status, total, parsed, noise, quarantined = _file(db, "r/queue.txt")
    assert (status, total, parsed, quarantined) == ("loaded", raw_line_count(path), rows - 1, 1)
    q = _quarantine(db, "r/queue.txt")
    assert [n for n, _ in q] == [bad] and "day is out of range" in q[0][1]


def test_impossible_dates_in_iostat_and_smtp_source_quarantine_lines(tmp_path):
    import re

    archive = tmp_path / "archive"
    (archive / "r").mkdir(parents=True)
    iostat = archive / "r/iostat.txt"
    shutil.copy(FIXTURES / "sysstat/iostat_iso.txt", iostat)
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
    bad_io = _poison(iostat, lambda ln: bool(stamp.match(ln)), lambda ln: "2026-13-21" + ln[10:])
    smtp = archive / "r/smtp-source.out"
    smtp.write_bytes(
        b"start 2026-11-21T22:26:15.002724575Z\n1\r2\r3\nsmtp-source exit=0\n"
        b"end 2026-11-21T22:26:34.033752604Z\nstart 2026-02-30T22:27:15.0Z\n1\r2\nsmtp-source exit=0\n"
    )
    db = tmp_path / "t.duckdb"
    ingest_archive(archive, db, tmp_path / "work")
    assert _file(db, "r/iostat.txt")[0] == "loaded"
    assert bad_io in [n for n, _ in _quarantine(db, "r/iostat.txt")]
    assert _file(db, "r/smtp-source.out")[0] == "loaded"
    assert [n for n, _ in _quarantine(db, "r/smtp-source.out")] == [5]


# 4. a parser bug fails the run naming file and line; it is never recorded as bad input
class _BuggyParser(Parser):
    """A real parser with a real bug: it leaves line 2 unaccounted for."""

    format = "buggy"
    version = "0"
    tables = {"buggy_rows": "v VARCHAR"}

    def sniff(self, head: str, name: str) -> int:
        return 100 if name == "bug.txt" else 0

    def parse(self, lines, ctx: ParseContext) -> Ledger:
        L = Ledger()
        for line_no, raw in lines:
            if line_no == 2:
                assert raw.startswith("fine"), f"unexpected {raw!r}"
            L.add("buggy_rows", line_no, 0, v=raw)
        return L


def test_parser_bug_fails_the_run_naming_file_and_line(tmp_path, monkeypatch):
    from ingest.landing import parser_tables  # noqa: F401  (the registry is read at call time)
    from ingest.parsers import PARSERS

    monkeypatch.setitem(PARSERS, "buggy", _BuggyParser())
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "r")
    (archive / "r/bug.txt").write_text("fine\nnot fine\nfine\n")
    monkeypatch.setenv("MTABENCH_DATA", str(tmp_path / "data"))
    serving = tmp_path / "serving.duckdb"
    monkeypatch.setenv("MTABENCH_SERVING_DB", str(serving))
    from mtabench.cli.main import main

    with pytest.raises(loader.ParserBug, match=r"r/bug\.txt line 2: .*AssertionError"):
        ingest_archive(archive, tmp_path / "a.duckdb", tmp_path / "work")
    assert main(["run", str(archive), "--db", str(tmp_path / "b.duckdb")]) == 5
    assert not serving.exists()


# 5. a missing archive fails the run and publishes nothing, even over an earlier database
def test_run_of_a_missing_archive_exits_nonzero_and_publishes_nothing(tmp_path, monkeypatch):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "r")
    db = tmp_path / "t.duckdb"
    ingest_archive(archive, db, tmp_path / "work")
    monkeypatch.setenv("MTABENCH_DATA", str(tmp_path / "data"))
    serving = tmp_path / "serving.duckdb"
    monkeypatch.setenv("MTABENCH_SERVING_DB", str(serving))
    proc = subprocess.run(
        [*MTABENCH, "run", str(tmp_path / "NO_SUCH_PATH"), "--db", str(db)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode != 0
    assert "NO_SUCH_PATH" in proc.stderr
    assert not serving.exists()


# 7. `mtabench parse` prints strict JSON and no traceback on hostile input
def _strict(line: str) -> dict:
    def refuse(const: str):
        raise ValueError(f"not JSON: {const}")

    return json.loads(line, parse_constant=refuse)


@pytest.mark.parametrize(
    ("fmt", "text", "bad_line"),
    [
        ("queue_sizes", "utc,incoming,active,deferred,maildrop\n2026-02-30T00:00:00Z,1,2,3,4\n", 2),
        ("queue_sizes", "2026-11-21T22:05:06Z,0,0,0,0\n2026-11-21T22:05:11Z," + "9" * 5000 + ",0,0,0\n", 2),
        ("sample_series", "1\n2\n1e999\n3\n", 3),
        ("dtrace", "  sendmail   " + "7" * 4400 + "\n  postfix   12\n", 1),
        ("smtp_source", "start 2026-13-01T22:26:15.002724575Z\n1\r2\r3\nsmtp-source exit=0\n", 1),
    ],
)
def test_parse_never_tracebacks_and_prints_strict_json(tmp_path, fmt, text, bad_line):
    path = tmp_path / "in.txt"
    path.write_text(text)
    proc = subprocess.run([*MTABENCH, "parse", fmt, str(path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    objs = [_strict(line) for line in proc.stdout.splitlines()]
    assert len(objs) == text.count("\n")
    assert objs[bad_line - 1]["status"] == "quarantined"


def test_parse_of_binary_input_says_so_without_traceback(tmp_path):
    path = tmp_path / "in.bin"
    path.write_bytes(bytes(range(256)) * 64)
    proc = subprocess.run(
        [*MTABENCH, "parse", "postal", str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2 and "binary" in proc.stderr and "Traceback" not in proc.stderr


# 3. content decides: stray control bytes quarantine lines, binary is refused, UTF-16 is decoded
def _nul_into(path: Path, line_no: int) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[line_no - 1] = lines[line_no - 1][:5] + b"\x00" + lines[line_no - 1][5:]
    path.write_bytes(b"\n".join(lines))


def test_a_nul_byte_near_the_top_quarantines_only_its_line(tmp_path):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "r")
    _nul_into(archive / "r/vmstat.txt", 4)
    _nul_into(archive / "r/postconf-n.txt", 2)
    db = tmp_path / "t.duckdb"
    ingest_archive(archive, db, tmp_path / "work")
    for name, line in (("vmstat.txt", 4), ("postconf-n.txt", 2)):
        status, total, parsed, noise, quarantined = _file(db, f"r/{name}")
        assert (status, total, quarantined) == ("loaded", raw_line_count(archive / "r" / name), 1), name
        assert [n for n, _ in _quarantine(db, f"r/{name}")] == [line], name


def test_a_nul_byte_in_a_maillog_head_loses_no_line(tmp_path):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "r")
    import gzip

    path = archive / "r/maillog.gz"
    lines = gzip.decompress(path.read_bytes()).split(b"\n")
    lines[9] = lines[9][:20] + b"\x00" + lines[9][20:]  # line 10, well inside the first 64 KB
    path.write_bytes(gzip.compress(b"\n".join(lines)))
    db = tmp_path / "t.duckdb"
    ingest_archive(archive, db, tmp_path / "work")
    status, total, parsed, noise, quarantined = _file(db, "r/maillog.gz")
    assert status == "loaded" and total == raw_line_count(path)
    assert parsed + noise + quarantined == total and parsed >= total - 1


def test_binary_is_refused_and_utf16_is_decoded(tmp_path):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "r")
    text = (BASE / "queue.txt").read_text()
    (archive / "r/queue.txt").write_bytes(text.encode("utf-16"))  # with BOM
    (archive / "r/vmstat.txt").write_bytes((BASE / "vmstat.txt").read_text().encode("utf-16-le"))
    (archive / "r/blob.bin").write_bytes(bytes(range(256)) * 64)
    db = tmp_path / "t.duckdb"
    ingest_archive(archive, db, tmp_path / "work")
    rows = sum(1 for ln in text.splitlines() if ln[:1].isdigit())
    assert _file(db, "r/queue.txt")[:3] == ("loaded", text.count("\n"), rows)
    assert _file(db, "r/vmstat.txt")[0] == "loaded"
    assert _file(db, "r/vmstat.txt")[1] == (BASE / "vmstat.txt").read_text().count("\n")
    with duckdb.connect(str(db), read_only=True) as con:
        status, message = con.execute(
            "select status, message from raw.files where path = 'r/blob.bin'"
        ).fetchone()
        encodings = dict(con.execute("select path, encoding from raw.files").fetchall())
    assert status == "error" and "binary" in message
    assert encodings["r/queue.txt"] == "utf-16-le" and encodings["r/vmstat.txt"] == "utf-16-le"


# 6. a full-archive ingest drops runs the archive no longer has; a per-folder ingest does not
def _run_keys(db: Path) -> list[str]:
    with duckdb.connect(str(db), read_only=True) as con:
        return [r[0] for r in con.execute("select run_key from raw.runs order by 1").fetchall()]


def test_runs_removed_from_the_archive_are_dropped_by_a_full_ingest(tmp_path):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "r1")
    shutil.copytree(SAMPLES / "runs/d-errors-rcpt-rejects", archive / "r2")
    db, work = tmp_path / "t.duckdb", tmp_path / "work"
    ingest_archive(archive, db, work)
    assert _run_keys(db) == ["r1", "r2"]
    shutil.rmtree(archive / "r2")
    ingest_archive(archive, db, work, only={"r1"})  # per folder: r2 stays
    assert _run_keys(db) == ["r1", "r2"]
    scan = subprocess.run(
        [*MTABENCH, "scan", str(archive), "--db", str(db)], capture_output=True, text=True, check=True
    ).stdout
    assert [ln.split()[:2] for ln in scan.splitlines()] == [["unchanged", "r1"], ["removed", "r2"]]
    report = ingest_archive(archive, db, work)
    assert report.dropped == ["r2"] and _run_keys(db) == ["r1"]
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select count(*) from raw.files where run_key = 'r2'").fetchone() == (0,)
        assert con.execute(
            "select count(*) from raw.postal_rows where file_id not in (select file_id from raw.files)"
        ).fetchone() == (0,)


# 10. one lock for the whole pipeline; a second run is told who holds it; children die with us
HOLD_LOCK = """
import sys, time
from pathlib import Path
from mtabench.pipeline.lock import pipeline_lock
with pipeline_lock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_second_run_is_refused_with_the_holders_pid(tmp_path):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "r")
    db = tmp_path / "t.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        for cmd in (["run", str(archive)], ["ingest", str(archive)], ["build"]):
            proc = subprocess.run(
                [*MTABENCH, *cmd, "--db", str(db)], capture_output=True, text=True, timeout=300
            )
            assert proc.returncode == 6, (cmd, proc.stderr)
            assert f"another run (pid {holder.pid}) holds {db}" in proc.stderr
            assert "Traceback" not in proc.stderr
    finally:
        holder.kill()
        holder.wait()
    # the kernel dropped the lock with its holder (kill -9): the next run goes ahead
    proc = subprocess.run(
        [*MTABENCH, "ingest", str(archive), "--db", str(db)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr


TIED_CHILD = """
import time
from mtabench.pipeline.lock import popen_tied
child = popen_tied(["sleep", "300"])
print(child.pid, flush=True)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_children_die_when_mtabench_is_killed():
    import signal
    import time

    parent = subprocess.Popen([sys.executable, "-c", TIED_CHILD], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert _alive(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


# 9. bundle extraction is bounded (size and compression ratio) and leaves nothing behind
def _zip(path: Path, members: dict[str, bytes]) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def test_a_zip_bomb_is_refused_with_a_clear_error_and_nothing_is_left(tmp_path):
    archive = tmp_path / "archive"
    shutil.copytree(BASE, archive / "good")
    _zip(archive / "bomb.zip", {"run/vmstat.txt": b"\0" * (256 << 20)})  # 256 MiB of zeros
    packed = (archive / "bomb.zip").stat().st_size
    assert packed < 1 << 20  # the ratio is the bomb's: over 250:1
    _zip(archive / "fine.zip", {"run/postal.csv": (BASE / "postal.csv").read_bytes()})
    db, work = tmp_path / "t.duckdb", tmp_path / "work"
    report = ingest_archive(archive, db, work)
    problems = {p.path: p.message for p in report.problems}
    assert "decompression bomb" in problems["bomb.zip"]
    assert _file(db, "good/vmstat.txt")[0] == "loaded" and _file(db, "fine.zip/postal.csv")[0] == "loaded"
    leftovers = [p for p in work.rglob("*") if p.is_file()]
    assert leftovers == []


# 15. "nothing lost" proven from the landed rows, and by the GX landing suite
def test_landed_rows_account_for_every_line_of_every_sample(tmp_path):
    from expectations.validate import ValidationFailed, validate
    from ingest.accounting import landed_lines_sql

    db = tmp_path / "t.duckdb"
    ingest_archive(SAMPLES, db, tmp_path / "work")
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            f"select path, lines_total, landed_lines, lost_lines from ({landed_lines_sql()})"
        ).fetchall()
    assert len(rows) == sum(1 for p in SAMPLES.rglob("*") if p.is_file() and p.name != "run.toml")
    for path, total, landed, lost in rows:
        assert (landed, lost) == (total, 0), path
        assert total == raw_line_count(SAMPLES / path), path  # an independent newline count
    validate(db, tmp_path / "gx", suites=["landing"])
    # lose one line's row: the counters in raw.files still add up, the landed rows do not
    with duckdb.connect(str(db)) as con:
        fid, line_no = con.execute(
            "select n.file_id, n.line_no from raw.noise n join raw.files f using (file_id) "
            "where f.format = 'vmstat' limit 1"
        ).fetchone()
        con.execute("delete from raw.noise where file_id = ? and line_no = ?", [fid, line_no])
    with pytest.raises(ValidationFailed, match="raw_line_accounting"):
        validate(db, tmp_path / "gx", suites=["landing"])


def test_line_accounting_fails_a_maillog_line_landed_twice(tmp_path):
    """raw.maillog's rows are counted, not made distinct (ingest/accounting.py): a maillog part
    read twice (its ledger row doubled) lands each of its lines twice, and the file fails."""
    from expectations.validate import ValidationFailed, validate
    from ingest import arrow_landing
    from ingest.landing import bulk_tables

    db = tmp_path / "t.duckdb"
    ingest_archive(SAMPLES / "runs" / "d0-postal-segfault-connlimit", db, tmp_path / "work")
    validate(db, tmp_path / "gx", suites=["landing"])
    with duckdb.connect(str(db)) as con:
        con.execute(
            "insert into raw.parquet_files "
            "select * from raw.parquet_files where table_name = 'maillog' limit 1"
        )
        arrow_landing.rebuild_view(con, "maillog", bulk_tables()["maillog"])
    with pytest.raises(ValidationFailed, match="raw_line_accounting"):
        validate(db, tmp_path / "gx", suites=["landing"], changed_only=False)


def test_line_accounting_in_batches_of_files_still_finds_a_lost_line(tmp_path, monkeypatch):
    """validate runs the per-file line accounting on batches of files (bounded memory at 236x):
    with tiny batches every file is still checked, and a lost line still fails its file."""
    import expectations.validate as v

    monkeypatch.setattr(v, "BATCH_LINES", 500)
    monkeypatch.setattr(v, "BATCH_FILES", 3)
    queries: list[str] = []
    file_parts = v._file_parts

    def counting(con, check, scope):
        parts = file_parts(con, check, scope)
        queries.extend(parts)
        return parts

    monkeypatch.setattr(v, "_file_parts", counting)
    db = tmp_path / "t.duckdb"
    ingest_archive(SAMPLES, db, tmp_path / "work")
    with duckdb.connect(str(db), read_only=True) as con:
        files = con.execute("select count(*) from raw.files").fetchone()[0]
    v.validate(db, tmp_path / "gx", suites=["landing"])
    assert len(queries) >= files / 3  # batched: at most three files per query
    with duckdb.connect(str(db)) as con:
        fid, path = con.execute(
            "select n.file_id, f.path from raw.noise n join raw.files f using (file_id) "
            "where f.format = 'vmstat' order by f.file_id desc limit 1"
        ).fetchone()
        con.execute(
            "delete from raw.noise where file_id = ? and line_no = "
            "(select min(line_no) from raw.noise where file_id = ?)",
            [fid, fid],
        )
    with pytest.raises(v.ValidationFailed, match="raw_line_accounting") as failed:
        v.validate(db, tmp_path / "gx", suites=["landing"], changed_only=False)
    assert str(fid) in str(failed.value) or path in str(failed.value)
