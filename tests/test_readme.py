"""README command lines that a new user copies must work as written."""

from __future__ import annotations

import re
import shlex
import subprocess

from conftest import REPO

README = (REPO / "README.md").read_text()
DAG_IDS = {m for p in (REPO / "dags").glob("*.py") for m in re.findall(r'dag_id="([^"]+)"', p.read_text())}


def test_unpause_lines_name_one_existing_dag_each():
    lines = [line for line in README.splitlines() if "airflow dags unpause" in line]
    assert lines
    for line in lines:
        args = shlex.split(line.split("#", 1)[0])
        dag_ids = args[args.index("unpause") + 1 :]
        assert len(dag_ids) == 1 and dag_ids[0] in DAG_IDS, line  # Airflow 3.3: one dag id per call


def test_readme_duckdb_command_runs(built_db, data_dir):
    lines = [line for line in README.splitlines() if line.startswith("uv run duckdb ")]
    assert lines
    serving = data_dir / "serving" / "mtabench.duckdb"
    for line in lines:
        args = shlex.split(line.split("#", 1)[0])
        args = [str(serving) if a == "data/serving/mtabench.duckdb" else a for a in args]
        out = subprocess.run(
            [*args, "-csv", "-noheader", "-c", "select count(*) > 0 from runs"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert out.returncode == 0 and out.stdout.strip() == "true", out.stderr


def test_readme_names_no_missing_recording_script():
    for m in re.finditer(r"recording script", README):
        assert (REPO / "scripts" / "record_run.sh").exists(), README[m.start() - 200 : m.end() + 50]
