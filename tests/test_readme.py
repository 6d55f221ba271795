"""Every command in the README runs as written (tests/test_readme.py is its test).

Each command of the README (the lines of its `sh` blocks and the commands quoted in its prose)
is dispatched on what it is, and one this module does not know fails, so a command added to
the README needs a way to be run here:

- `make T`: `make -n T`, the target and its recipe as make expands them (`make run`'s
  pipeline is what the `built_db` fixture runs; `make test` is CI itself);
- `uv run mtabench record ...`: run with `--dry-run` into a temporary archive (the real thing
  needs root, a local Postfix and minutes of load): the whole command line is parsed and
  planned by the real CLI;
- `uv run mtabench run archive`, `uv run mtabench compare A B`: run for real on an archive laid
  out as the README shows, two sample runs renamed to the README's run ids;
- `uv run duckdb -readonly <serving file>`: the duckdb binary on the samples' serving file;

The README's SQL runs statement by statement on the samples' serving file, each giving rows;
its run.toml parses with no field left out; its links point at files that exist.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tomllib

import duckdb
import pytest
from conftest import REPO, SAMPLES

README = (REPO / "README.md").read_text()
DAG_IDS = {m for p in (REPO / "dags").glob("*.py") for m in re.findall(r'dag_id="([^"]+)"', p.read_text())}


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"^```{lang}\n(.*?)^```", README, re.S | re.M)


def _commands() -> list[list[str]]:
    """The command lines of the `sh` blocks, comments stripped, then the commands quoted in the
    prose (`make ...`, `uv run ...`, `bash ...`, `scripts/...`), as argument lists."""
    found = []
    for block in _blocks("sh"):
        for line in block.replace("\\\n", " ").splitlines():
            args = shlex.split(line, comments=True)
            if args:
                found.append(args)
    assert found, "no sh block in the README"
    prose = re.sub(r"^```.*?^```", "", README, flags=re.S | re.M)
    found += [shlex.split(m) for m in re.findall(r"`((?:make|uv run|bash|scripts/)[^`]*)`", prose)]
    return found


COMMANDS = _commands()


def _kind(args: list[str]) -> str:
    if args[0] == "make" and len(args) == 2:
        return "make"
    if args[:3] == ["uv", "run", "mtabench"]:
        return f"mtabench {args[3]}"
    if args[:3] == ["uv", "run", "duckdb"]:
        return "duckdb"
    return "unknown"


def _run(args: list[str], env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=REPO, capture_output=True, text=True, check=False, timeout=timeout, env=env
    )


def test_make_run_and_make_test_come_first():
    first = _blocks("sh")[0]
    assert README.index(first) < README.index("\n## "), "the set-up commands are the README's first block"
    assert [a[:2] for a in COMMANDS[:2]] == [["make", "run"], ["make", "test"]]


def test_every_command_is_one_this_module_runs():
    unknown = [shlex.join(a) for a in COMMANDS if _kind(a) not in KNOWN]
    assert unknown == [], "README commands no test runs"


@pytest.mark.parametrize("target", sorted({a[1] for a in COMMANDS if _kind(a) == "make"}))
def test_make_target_expands(target):
    p = _run(["make", "-n", target], timeout=60)
    assert p.returncode == 0 and p.stdout.strip(), p.stderr


def test_record_commands_plan_with_the_real_cli(tmp_path):
    lines = [a for a in COMMANDS if _kind(a) == "mtabench record"]
    assert lines
    for args in lines:
        args = [str(tmp_path / "archive") if a == "archive" else a for a in args]
        split = args.index("--")
        if "--dry-run" not in args:
            args = [*args[:split], "--dry-run", *args[split:]]
        p = _run(args, timeout=120)
        assert p.returncode == 0, shlex.join(args) + "\n" + p.stdout + p.stderr
        assert f"record {args[4]} into {tmp_path / 'archive' / args[4]}" in p.stdout, p.stdout
    assert not (tmp_path / "archive").exists(), "a dry run wrote files"


@pytest.fixture(scope="module")
def readme_archive(tmp_path_factory):
    """The README's layout: archive/disk-tuning/{baseline,plimit2}, from two recorded sample runs."""
    root = tmp_path_factory.mktemp("readme")
    for run_id, sample in (("baseline", "a-baseline-t5"), ("plimit2", "c-throttled-queue-backlog")):
        dest = root / "archive" / "disk-tuning" / run_id
        shutil.copytree(SAMPLES / "runs" / sample, dest)
        toml = dest / "run.toml"
        toml.write_text(re.sub(r'^run_id = ".*"$', f'run_id = "{run_id}"', toml.read_text(), flags=re.M))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH_")}
    env["MTABENCH_DATA"] = str(root / "data")
    return root, env


def test_run_and_compare_commands_run_on_an_archive_laid_out_as_shown(readme_archive):
    root, env = readme_archive
    lines = [a for a in COMMANDS if _kind(a) in ("mtabench run", "mtabench compare")]
    assert [a[3] for a in lines] == ["run", "compare"]
    for args in lines:
        args = [str(root / "archive") if a == "archive" else a for a in args]
        p = _run(args, env=env, timeout=900)
        assert p.returncode == 0, shlex.join(args) + "\n" + p.stdout[-3000:] + p.stderr[-3000:]
    runs = duckdb.connect(str(root / "data" / "serving" / "mtabench.duckdb"), read_only=True)
    assert sorted(r[0] for r in runs.sql("select run_id from runs").fetchall()) == ["baseline", "plimit2"]
    assert re.search(r"^x .*\n\+ .*\n", p.stdout, re.M) and "confidence" in p.stdout, p.stdout


def test_duckdb_command_opens_the_serving_file(built_db, data_dir):
    lines = [a for a in COMMANDS if _kind(a) == "duckdb"]
    assert lines
    serving = data_dir / "serving" / "mtabench.duckdb"
    for args in lines:
        args = [str(serving) if a == "data/serving/mtabench.duckdb" else a for a in args]
        p = _run([*args, "-csv", "-noheader", "-c", "select count(*) > 0 from runs"], timeout=300)
        assert p.returncode == 0 and p.stdout.strip() == "true", p.stderr


def _statements() -> list[str]:
    found = [s.strip() for block in _blocks("sql") for s in block.split(";") if s.strip()]
    assert len(found) >= 5, found
    return found


@pytest.mark.parametrize("sql", _statements(), ids=lambda s: s.splitlines()[0][:60])
def test_sql_question_answers_on_the_samples(built_db, data_dir, sql):
    with duckdb.connect(str(data_dir / "serving" / "mtabench.duckdb"), read_only=True) as con:
        rows = con.sql(sql).fetchall()
    assert rows, sql


def test_run_toml_example_parses_with_no_field_left_out():
    from ingest.manifest import parse_manifest

    (block,) = _blocks("toml")
    tomllib.loads(block)
    manifest = parse_manifest(block)
    assert manifest.problems == [] and manifest.extra == {}, (manifest.problems, manifest.extra)
    assert manifest.changed_settings and manifest.tool.get("command")


def test_links_point_at_files_that_exist():
    targets = re.findall(r"\]\(([^)#]+)\)", README)
    assert targets
    missing = [t for t in targets if "://" not in t and not (REPO / t).exists()]
    assert missing == []


def test_readme_is_a_door():
    assert len(README.splitlines()) <= 200


KNOWN = {
    "make": test_make_target_expands,
    "mtabench record": test_record_commands_plan_with_the_real_cli,
    "mtabench run": test_run_and_compare_commands_run_on_an_archive_laid_out_as_shown,
    "mtabench compare": test_run_and_compare_commands_run_on_an_archive_laid_out_as_shown,
    "duckdb": test_duckdb_command_opens_the_serving_file,
}
