"""The command line: `mtabench parse` and `mtabench docs` as a user runs them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys

import duckdb
from conftest import SAMPLES, raw_line_count

MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]


def test_parse_prints_one_json_object_per_line():
    path = SAMPLES / "runs/d-errors-rcpt-rejects/postal.csv"
    out = subprocess.run(
        [*MTABENCH, "parse", "postal", str(path)], capture_output=True, text=True, check=True
    )
    objs = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(objs) == raw_line_count(path)
    assert [o["line_no"] for o in objs] == list(range(1, len(objs) + 1))
    first = objs[0]
    assert first["status"] == "parsed" and first["items"][0]["smtp_code"] == 451
    assert objs[1] == {"line_no": 2, "status": "noise", "items": [{"noise": "reply_terminator", "text": "."}]}


def test_parse_reads_stdin_and_reports_quarantine():
    text = "time,messages,data(K),errors,connections\n10:00,1,1,0,1\ngarbage here\n"
    out = subprocess.run(
        [*MTABENCH, "parse", "postal", "-"], input=text, capture_output=True, text=True, check=True
    )
    objs = [json.loads(line) for line in out.stdout.splitlines()]
    assert [o["status"] for o in objs] == ["noise", "parsed", "quarantined"]
    assert objs[2]["items"][0]["quarantine"] == "unrecognised text in postal output"


def test_dbt_docs_generate(built_db, data_dir):
    from mtabench.cli.main import main

    assert main(["docs", "--db", str(built_db)]) == 0
    catalog = json.loads((data_dir / "dbt_target" / "catalog.json").read_text())
    assert "model.mtabench.runs" in catalog["nodes"]


def _ingest_new(archive, data) -> tuple[dict[str, str], dict[str, dict], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")} | {"MTABENCH_DATA": str(data)}
    out = subprocess.run(
        [*MTABENCH, "ingest", str(archive), "--new", "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    objs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    scans = {o["run_key"]: o["scan"] for o in objs if "scan" in o}
    # what the Airflow task lands: the scan line says it, the outcomes are exactly those runs
    assert {o["run_key"] for o in objs if "scan" in o and o["to_ingest"]} == {
        o["run_key"] for o in objs if "scan" not in o
    }
    return scans, {o["run_key"]: o for o in objs if "scan" not in o}, out


def test_ingest_new_scans_then_ingests_only_what_is_new(tmp_path):
    """`ingest --new` (the Airflow DAG's one ingest task): a scan line per run, then an outcome
    per new run only; with nothing new it only scans, and the landing DB stays as it was."""
    archive, data = tmp_path / "archive", tmp_path / "data"
    shutil.copytree(SAMPLES / "runs/d-errors-rcpt-rejects", archive / "d")
    shutil.copytree(SAMPLES / "runs/e-smtp-source-s5", archive / "e")
    files = {p.name: sum(1 for f in p.iterdir() if f.is_file()) for p in archive.iterdir()}

    scans, outcomes, _ = _ingest_new(archive, data)
    assert scans == {"d": "new", "e": "new"}
    assert {k: (o["files"], o["loaded"], o["errors"]) for k, o in outcomes.items()} == {
        k: (n, n, []) for k, n in files.items()
    }

    shutil.copytree(SAMPLES / "runs/h-rabid-alone", archive / "h")
    scans, outcomes, _ = _ingest_new(archive, data)
    assert scans == {"d": "unchanged", "e": "unchanged", "h": "new"}
    assert set(outcomes) == {"h"}

    db = data / "mtabench.duckdb"
    landed = (hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns)
    scans, outcomes, out = _ingest_new(archive, data)
    assert set(scans.values()) == {"unchanged"} and not outcomes
    assert "nothing new" in out
    assert (hashlib.sha256(db.read_bytes()).hexdigest(), db.stat().st_mtime_ns) == landed


def test_ingest_names_unrecognised_files_and_lines_not_understood(tmp_path):
    """`mtabench ingest` says what it landed without understanding: every file of no known
    format by name, and the maillog lines of known programs the parser filed as `other`
    (counted in raw.files, first line named, listed by `parse maillog --unknown`)."""
    archive, data = tmp_path / "archive", tmp_path / "data"
    run = archive / "r1"
    run.mkdir(parents=True)
    (run / "maillog").write_text(
        "Nov 27 10:00:00 mx postfix/smtpd[42]: connect from unknown[192.0.2.1]\n"
        "Nov 27 10:00:01 mx postfix/smtpd[42]: a shape postfix never logged\n"
        "Nov 27 10:00:02 mx CRON[43]: (root) CMD (true)\n"
        "Nov 27 10:00:03 mx dovecot: imap(u)<1><s>: something new\n"
        "Nov 27 10:00:04 mx postfix/smtpd[42]: disconnect from unknown[192.0.2.1] ehlo=1 quit=1 commands=2\n"
    )
    names = ["notes.dat", "scope-capture.bin"]
    for n in names:
        (run / n).write_text("nothing any parser of this project reads\n" * 3)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")} | {"MTABENCH_DATA": str(data)}
    out = subprocess.run(
        [*MTABENCH, "ingest", str(archive)], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert "2 file(s) not recognised (recorded, not parsed):" in out
    for n in names:
        assert f"  {run / n}\n" in out
    assert (
        "maillog: 2 line(s) of known programs not understood in 1 file(s) "
        f"(first: {run / 'maillog'} line 2); list them: mtabench parse maillog --unknown FILE"
    ) in out
    import duckdb

    with duckdb.connect(str(data / "mtabench.duckdb"), read_only=True) as con:
        got = con.execute(
            "select path, lines_other_known, first_other_known_line from raw.files where format = 'maillog'"
        ).fetchall()
    assert got == [("r1/maillog", 2, 2)]


def test_ingest_names_quarantined_lines_with_their_file_and_reason(tmp_path):
    """Lines quarantined are named by the ingest's notes, per file with the first one's line and
    reason (raw.quarantine holds each), also when the archive given is one run folder (its
    files' paths are then named from the folder above)."""
    run = tmp_path / "archive" / "r1"
    run.mkdir(parents=True)
    # an iostat device report whose header names columns no sysstat version has
    good = (SAMPLES / "runs" / "a-baseline-t5" / "iostat.txt").read_text().splitlines()
    lines = good[:12] + ["Device   tps   kB/s   zz/s", "vda   1.00   2.00   3.00"] + good[12:]
    (run / "iostat.txt").write_text("\n".join(lines) + "\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")} | {
        "MTABENCH_DATA": str(tmp_path / "data")
    }
    out = subprocess.run(
        [*MTABENCH, "ingest", str(run)], env=env, capture_output=True, text=True, check=True
    ).stdout
    import duckdb

    with duckdb.connect(str(tmp_path / "data" / "mtabench.duckdb"), read_only=True) as con:
        n, first, reason = con.execute(
            "select count(*), min(line_no), min_by(reason, line_no) from raw.quarantine"
        ).fetchone()
    assert n > 0
    assert f"{n} line(s) quarantined in 1 file(s), each with its reason in raw.quarantine:" in out
    assert f"  {run / 'iostat.txt'}: {n} line(s), first at line {first}: {reason}\n" in out


def test_ingest_run_takes_a_run_key_or_a_run_id_and_names_one_that_matches_nothing(tmp_path):
    """`ingest --run X`: X a run key (the folder, as scan lists it) or a run id (a run inside a
    folder, as the marts name it); an X that matches neither is an error that says so."""
    archive, data = tmp_path / "archive", tmp_path / "data"
    shutil.copytree(SAMPLES / "seed000/s9-proxymap", archive / "proxymap")  # five runs in one postal.out
    shutil.copytree(SAMPLES / "runs/d-errors-rcpt-rejects", archive / "d")
    env = {**os.environ, "MTABENCH_DATA": str(data)}
    cmd = [sys.executable, "-m", "mtabench.cli.main", "ingest", str(archive)]

    nothing = subprocess.run([*cmd, "--run", "no-such-run"], capture_output=True, text=True, env=env)
    assert nothing.returncode == 2
    assert "no run of" in nothing.stderr and "'no-such-run'" in nothing.stderr
    assert not (data / "mtabench.duckdb").exists()  # nothing was opened for writing

    by_key = subprocess.run([*cmd, "--run", "d"], capture_output=True, text=True, env=env)
    assert by_key.returncode == 0, by_key.stderr
    with duckdb.connect(str(data / "mtabench.duckdb"), read_only=True) as con:
        assert con.execute("select distinct run_key from raw.runs").fetchall() == [("d",)]

    # a run id the landing does not know yet: the folder's default id
    by_id = subprocess.run([*cmd, "--run", "proxymap"], capture_output=True, text=True, env=env)
    assert by_id.returncode == 0, by_id.stderr
    with duckdb.connect(str(data / "mtabench.duckdb"), read_only=True) as con:
        ids = dict(con.execute("select run_id, run_key from raw.runs").fetchall())
    folder_id = next(i for i, k in ids.items() if k == "proxymap")
    # the third of the folder's five runs, as the marts name it
    again = subprocess.run([*cmd, "--run", f"{folder_id}#3"], capture_output=True, text=True, env=env)
    assert again.returncode == 0, again.stderr
    both = subprocess.run([*cmd, "--run", "d", "--run", "nope"], capture_output=True, text=True, env=env)
    assert both.returncode == 2 and "'nope'" in both.stderr and "'d'" not in both.stderr


def test_a_uri_as_the_landing_folder_is_refused_not_made_a_folder(tmp_path):
    """MTABENCH_LANDING is a local folder: an s3a:// value once became `./s3a:/bucket/landing`
    with exit 0. Now the command stops before ingesting, names the setting to use, and no
    folder of that name appears."""
    env = {**os.environ, "MTABENCH_DATA": str(tmp_path / "data"), "MTABENCH_LANDING": "s3a://bucket/landing"}
    env.pop("MTABENCH_DB", None)
    run = SAMPLES / "runs" / "a-baseline-t5"
    out = subprocess.run(
        [*MTABENCH, "ingest", "--parquet", str(run)], env=env, cwd=tmp_path, capture_output=True, text=True
    )
    assert out.returncode == 2, out.stdout + out.stderr
    assert "MTABENCH_SPARK_STORAGE" in out.stderr and "Traceback" not in out.stderr
    assert not [p for p in tmp_path.rglob("s3a*")]
    with duckdb.connect(str(tmp_path / "data" / "mtabench.duckdb")) as con:
        tables = con.execute("select count(*) from information_schema.tables where table_schema = 'raw'")
        assert tables.fetchone()[0] == 0


def test_ingest_loads_no_module_of_the_other_commands_and_failures_keep_their_exit_codes(tmp_path):
    """`mtabench ingest` imports neither validation, publishing nor dbt (their imports were a
    fixed cost of every ingest); a failure each of those commands reports still gets its exit
    code and message, and any other exception is raised."""
    archive = tmp_path / "archive"
    archive.mkdir()
    code = (
        "import sys\n"
        "from mtabench.cli.main import main\n"
        f"rc = main(['ingest', '--db', {str(tmp_path / 'x.duckdb')!r}, {str(archive)!r}])\n"
        "heavy = ('expectations.validate', 'mtabench.pipeline.publish', 'mtabench.pipeline.dbt', 'jinja2')\n"
        "print(rc, sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "0 []", out.stdout + out.stderr

    from expectations.validate import ValidationFailed
    from ingest.line_guard import ParserBug
    from mtabench.cli.main import _failure
    from mtabench.paths import Paths
    from mtabench.pipeline.dbt import DbtFailed
    from mtabench.pipeline.publish import ServingInUse

    paths = Paths.resolve(str(tmp_path / "x.duckdb"), None)
    failures = [
        (ServingInUse("a reader"), 6),
        (duckdb.IOException("Could not set lock on file"), 6),
        (ValidationFailed([], None), 3),
        (DbtFailed("a model failed"), 4),
        (ParserBug("a bug"), 5),
        (duckdb.IOException("disk full"), None),
        (ValueError("a bug of ours"), None),
    ]
    assert [_failure(exc, paths) for exc, _ in failures] == [code for _, code in failures]
