"""The command line: `mtabench parse` and `mtabench docs` as a user runs them."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import SAMPLES, raw_line_count

MTABENCH = [sys.executable, "-m", "mtabench.cli"]


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
    from mtabench.cli import main

    assert main(["docs", "--db", str(built_db)]) == 0
    catalog = json.loads((data_dir / "dbt_target" / "catalog.json").read_text())
    assert "model.mtabench.runs" in catalog["nodes"]
