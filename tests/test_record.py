"""`mtabench record` against a real Postfix on 127.0.0.1 (installed by scripts/setup_postfix_bench.sh).

Records a real 60 s postal run, ingests it with `mtabench run`, and checks it by independent routes:
postal.csv read here, pflogsumm on the cut maillog, `postconf -n` before and after. A second run is
interrupted with SIGINT mid-load: settings restored, no child left, run marked incomplete, still ingests.
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import duckdb
import pytest
from conftest import REPO
from test_maillog_parser import pflogsumm_totals

from ingest.manifest import parse_manifest

USERS = Path("/srv/bench/users.txt")
TOTALS = ("received", "delivered", "deferred", "bounced", "rejected")
LOAD = ["postal", "-t", "2", "-r", "1200", "-m", "4", "127.0.0.1", str(USERS)]  # bounded: <= 1200 msg/min


@pytest.fixture(scope="module")
def bench_postfix():
    proc = subprocess.run(
        ["bash", str(REPO / "scripts/setup_postfix_bench.sh")], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    listening = subprocess.run(["ss", "-Hltn", "sport = :25"], capture_output=True, text=True).stdout
    assert "127.0.0.1:25" in listening and "0.0.0.0:25" not in listening and "*:25" not in listening


def postconf_n() -> str:
    return subprocess.run(["postconf", "-n"], capture_output=True, text=True, check=True).stdout


def record_cmd(archive: Path, run_id: str, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mtabench.cli.main",
        "record",
        run_id,
        "--archive",
        str(archive),
        *extra,
        "--",
        *LOAD,
    ]


def mtabench_run(archive: Path, data: Path) -> Path:
    env = {**os.environ, "MTABENCH_DATA": str(data)}
    proc = subprocess.run(
        [sys.executable, "-m", "mtabench.cli.main", "run", str(archive)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return data / "mtabench.duckdb"


def manifest(run_dir: Path) -> dict:
    return tomllib.loads((run_dir / "run.toml").read_text())


def assert_all_gone(pids: dict[str, int]) -> None:
    assert pids and {"vmstat", "iostat"} <= pids.keys()
    for name, pid in pids.items():
        # each child led its own process group: nothing may be left in it either
        left = subprocess.run(["pgrep", "-g", str(pid)], capture_output=True, text=True).stdout.split()
        assert left == [], f"{name} (pid {pid}) left processes {left}"
        assert subprocess.run(["ps", "-p", str(pid)], capture_output=True).returncode == 1


def test_record_a_postal_run_and_ingest_it(bench_postfix, tmp_path):
    before = postconf_n()
    old_limit = subprocess.run(["postconf", "-h", "default_process_limit"], capture_output=True, text=True)
    archive = tmp_path / "archive"
    cmd = record_cmd(
        archive,
        "rec-limit20",
        # postal prints a row when the wall-clock minute turns: 65 s holds a turn at least 5 s
        # before the stop wherever the load starts (60 s loses the row when it starts at :00)
        "--duration",
        "65",
        "--drain",
        "60",
        "--set",
        "default_process_limit=20",
        "--label",
        "limit 20",
        "--tag",
        "test",
    )
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert postconf_n() == before

    run_dir = archive / "rec-limit20"
    m = manifest(run_dir)
    assert m["incomplete"] is False and m["load_exit_code"] == 128 + signal.SIGTERM
    assert m["mta"]["changed_settings"] == {"default_process_limit": "20"}
    assert m["mta"]["previous_settings"] == {"default_process_limit": old_limit.stdout.strip()}
    parsed = parse_manifest((run_dir / "run.toml").read_text())  # what ingest reads
    assert parsed.changed_settings == {"default_process_limit": "20"}
    assert parsed.previous_settings == {"default_process_limit": old_limit.stdout.strip()}
    assert "default_process_limit = 20" in (run_dir / "postconf-n.txt").read_text().splitlines()
    assert m["tool"]["name"] == "postal" and m["tool"]["command"].startswith("stdbuf -oL postal")
    assert m["queue_left_at_stop"].startswith("incoming=0 active=0")
    assert_all_gone(m["recorder"]["pids"])

    # postal's rows, read here with csv (the run crosses a minute boundary, see --duration)
    with open(run_dir / "postal.csv", newline="") as fh:
        rows = [r for r in csv.reader(fh) if r and r[0][:1].isdigit()]
    assert rows, (run_dir / "postal.csv").read_text()
    queue_rows = (run_dir / "queue.txt").read_text().splitlines()
    assert queue_rows[0] == "utc,incoming,active,deferred,maildrop" and len(queue_rows) >= 14

    db = mtabench_run(archive, tmp_path / "data")
    with duckdb.connect(str(db), read_only=True) as con:
        minutes = con.execute(
            "select messages from minutes where run_id = 'rec-limit20' and has_load_row "
            "order by minute_offset"
        ).fetchall()
        totals = con.execute(f"select {', '.join(TOTALS)} from runs where run_id = 'rec-limit20'").fetchone()
        label = con.execute("select label from runs where run_id = 'rec-limit20'").fetchone()
    assert [r[0] for r in minutes] == [int(r[1]) for r in rows]
    expected = pflogsumm_totals(run_dir / "maillog.gz")
    assert dict(zip(TOTALS, totals, strict=True)) == {k: expected[k] for k in TOTALS}
    # SIGTERM may cut one message per postal thread after smtpd logged client= and before delivery
    assert expected["delivered"] > 0 and 0 <= expected["received"] - expected["delivered"] <= 2
    assert label == ("limit 20",)


def test_sigint_mid_run_restores_settings_and_leaves_an_incomplete_run(bench_postfix, tmp_path):
    before = postconf_n()
    archive = tmp_path / "archive"
    run_dir = archive / "rec-interrupted"
    cmd = record_cmd(archive, "rec-interrupted", "--duration", "60", "--set", "default_process_limit=30")
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait until the load runs
            if (run_dir / "run.toml").exists() and "load" in manifest(run_dir)["recorder"]["pids"]:
                break
            time.sleep(0.5)
        running = manifest(run_dir)
        assert "load" in running["recorder"]["pids"]
        assert "default_process_limit = 30" in postconf_n().splitlines()
        time.sleep(8)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    assert postconf_n() == before
    m = manifest(run_dir)
    assert m["incomplete"] is True and "SIGINT" in m["incomplete_reason"], m
    assert parse_manifest((run_dir / "run.toml").read_text()).extra["incomplete"] is True
    assert_all_gone(m["recorder"]["pids"])
    assert (run_dir / "maillog.gz").exists() and (run_dir / "queue.txt").exists()

    db = mtabench_run(archive, tmp_path / "data")
    with duckdb.connect(str(db), read_only=True) as con:
        got = con.execute("select received, delivered from runs where run_id = 'rec-interrupted'").fetchone()
    expected = pflogsumm_totals(run_dir / "maillog.gz")
    assert got == (expected["received"], expected["delivered"]) and expected["received"] > 0


@pytest.mark.parametrize(
    ("command", "host"),
    [
        (["postal", "-t", "5", "-m", "4", "127.0.0.1", "users.txt"], "127.0.0.1"),
        (["stdbuf", "-oL", "postal", "-p", "2525", "-c", "3", "localhost", "u.txt"], "localhost"),
        (["timeout", "-s", "INT", "60", "rabid", "-p", "4", "192.0.2.7", "u.txt"], "192.0.2.7"),
        (["smtp-source", "-s", "5", "-m", "100", "-t", "a@b.test", "inet:10.1.2.3:25"], "10.1.2.3"),
        (["smtp-source", "-s", "5", "[::1]:25"], "::1"),
    ],
)
def test_load_target_host_is_read_from_the_command(command, host):
    from mtabench.record.target import identify

    assert identify(command).host == host


def test_non_loopback_targets_are_refused_unless_allowed(tmp_path, capsys):
    from mtabench.cli.main import main

    load = ["--", "postal", "-t", "5", "198.51.100.9", str(USERS)]
    assert main(["record", "r1", "--archive", str(tmp_path), "--dry-run", *load]) == 2
    assert "not loopback" in capsys.readouterr().err
    assert main(["record", "r1", "--archive", str(tmp_path), "--dry-run", "--allow-remote", *load]) == 0
    unknown = ["--", "./my-load.sh", "example.org"]
    assert main(["record", "r1", "--archive", str(tmp_path), "--dry-run", *unknown]) == 2
    assert "--allow-remote" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # a dry run creates nothing


def test_dry_run_prints_the_plan(tmp_path, capsys):
    from mtabench.cli.main import main

    argv = ["record", "r2", "--archive", str(tmp_path), "--set", "default_process_limit=20", "--dry-run"]
    argv += ["--log2", "/var/log/dovecot.log", "--", "postal", "-t", "5", "127.0.0.1", str(USERS)]
    assert main(argv) == 0
    plan = capsys.readouterr().out
    assert "postconf -e 'default_process_limit = 20'" in plan
    assert f"stdbuf -oL postal -t 5 127.0.0.1 {USERS} > postal.csv, stopped with SIGTERM" in plan
    assert "/var/log/dovecot.log -> dovecot.log.gz" in plan


def test_log_window_is_cut_by_byte_offset_and_survives_rotation(tmp_path):
    import gzip

    from mtabench.record.logcut import LogWindow

    log = tmp_path / "maillog"
    log.write_bytes(b"before 1\nbefore 2\n")
    window = LogWindow.open_at_end(log)
    with open(log, "ab") as fh:
        fh.write(b"during 1\nduring 2\n")
    assert gzip.decompress(window.cut(tmp_path / "a.gz").read_bytes()) == b"during 1\nduring 2\n"
    assert window.describe() == f"bytes 18..36 of {log}"

    window = LogWindow.open_at_end(log)  # then logrotate moves it to maillog.1 and starts a new file
    with open(log, "ab") as fh:
        fh.write(b"during 3\n")
    log.rename(tmp_path / "maillog.1")
    log.write_bytes(b"after rotation, a longer line than the old window start\n")
    assert gzip.decompress(window.cut(tmp_path / "b.gz").read_bytes()) == b"during 3\n" + log.read_bytes()
    assert window.rotated


def test_also_runs_a_second_load_beside_the_first(tmp_path, capsys):
    from mtabench.cli.main import main

    argv = ["record", "r3", "--archive", str(tmp_path), "--dry-run"]
    argv += ["--also", f"rabid -r 300 127.0.0.1 {USERS}"]
    argv += ["--also", f"rabid -i 50 127.0.0.1 {USERS}", "--", "postal", "-t", "2", "127.0.0.1", str(USERS)]
    assert main(argv) == 0
    plan = capsys.readouterr().out
    assert f"stdbuf -oL rabid -r 300 127.0.0.1 {USERS} > rabid.csv, stopped with SIGTERM" in plan
    assert f"stdbuf -oL rabid -i 50 127.0.0.1 {USERS} > rabid-2.csv" in plan  # names stay unique
    remote = ["record", "r3", "--archive", str(tmp_path), "--dry-run", "--also", f"rabid 192.0.2.9 {USERS}"]
    assert main([*remote, "--", "postal", "127.0.0.1", str(USERS)]) == 2
    assert "not loopback" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
