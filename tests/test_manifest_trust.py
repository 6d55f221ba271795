"""run.toml is untrusted input: a field of the wrong type or value is named and left out,
an unreadable run.toml leaves the run on defaults, and neither stops the other runs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from conftest import SAMPLES
from fuzz_harness import check_manifest, manifest_cases, workdir
from hypothesis import HealthCheck, given, settings

from ingest.manifest import parse_manifest

BASE = SAMPLES / "runs/a-baseline-t5"
MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("load_exit_code = [1]", "load_exit_code must be an integer, got a list"),
        ("load_exit_code = 1979-05-27T07:32:00Z", "load_exit_code must be an integer, got a date-time"),
        ("load_exit_code = 99999999999", "load_exit_code must be an integer in"),
        ('tool = "postal"', "tool must be a table, got a string"),
        ("start_utc = 3", "start_utc must be a date-time (ISO 8601), got an integer"),
        ('duration_s = "long"', "duration_s must be a number, got a string"),
        ("duration_s = nan", "duration_s must be a finite number"),
        ("date = 2026-11-21T10:00:00", "date must be a date (YYYY-MM-DD), got a date-time"),
        ("tags = [[1]]", "tags must be a string or a list of strings, got a list"),
        ("run_id = {a = 1}", "run_id must be a string, got a table"),
        ("[mta]\nchanged_settings = 5", "mta.changed_settings must be a table, got an integer"),
        ("[tool]\nname = [1]", "tool.name must be a string, number, boolean or date, got a list"),
    ],
)
def test_a_bad_field_is_named_and_left_out(line, problem):
    m = parse_manifest(f'hostname = "vm"\n{line}\n')
    assert m.hostname == "vm"  # the rest of the manifest still counts
    assert len(m.problems) == 1 and m.problems[0].startswith("run.toml: " + problem), m.problems


def _manifest(run: Path, edit) -> None:
    (run / "run.toml").write_text(edit((run / "run.toml").read_text()))


def test_wrong_typed_manifests_do_not_stop_the_archive(tmp_path):
    """The four manifests of the report: each run loads, the archive publishes."""
    archive = tmp_path / "archive"
    bad = {
        "list-exit": lambda s: re.sub(r"(?m)^load_exit_code.*$", "load_exit_code = [1]", s),
        "string-tool": lambda s: 'tool = "postal"\n' + re.sub(r"(?ms)^\[tool\].*?(?=^\[)", "", s),
        "date-exit": lambda s: re.sub(r"(?m)^load_exit_code.*$", "load_exit_code = 1979-05-27T07:32:00Z", s),
    }
    for name, edit in bad.items():
        shutil.copytree(BASE, archive / name)
        _manifest(
            archive / name, lambda s, n=name, e=edit: re.sub(r'(?m)^run_id = ".*"', f'run_id = "{n}"', e(s))
        )
    shutil.copytree(BASE, archive / "binary-toml")
    (archive / "binary-toml/run.toml").write_bytes(bytes(range(256)) * 8)
    shutil.copytree(BASE, archive / "good")
    _manifest(archive / "good", lambda s: re.sub(r'(?m)^run_id = ".*"', 'run_id = "good"', s))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    env["MTABENCH_DATA"] = str(tmp_path / "data")
    proc = subprocess.run(
        [*MTABENCH, "run", str(archive)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    assert (
        "list-exit: run.toml fields ignored (run.toml: load_exit_code must be an integer, got a list)"
        in proc.stderr
    )
    assert (
        "string-tool: run.toml fields ignored (run.toml: tool must be a table, got a string)" in proc.stderr
    )
    assert "load_exit_code must be an integer, got a date-time" in proc.stderr
    assert re.search(r"binary-toml: run.toml unreadable \(run.toml: binary content", proc.stderr)
    served = tmp_path / "data/serving/mtabench.duckdb"
    with duckdb.connect(str(served), read_only=True) as con:
        runs = dict(con.execute("select run_id, load_exit_code from runs").fetchall())
    # the binary run.toml's run keeps its folder name; the sample's exit code is 137 (its run.toml)
    assert runs == {
        "list-exit": None,
        "string-tool": 137,
        "date-exit": None,
        "binary-toml": None,
        "good": 137,
    }
    assert "list-exit (list-exit/run.toml): fields ignored: run.toml: load_exit_code" in proc.stdout


FUZZ = settings(
    max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
)


@FUZZ
@given(doc=manifest_cases())
def test_manifest_fuzz_never_stops_the_other_runs(doc):
    with workdir() as work:
        out = check_manifest(doc, work)
    assert out.ok, (out.crashes, out.lost_lines, doc[:300])
