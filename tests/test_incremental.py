"""Incremental builds: after adding, changing and removing runs, an incremental
`mtabench build` holds exactly what a `--full-refresh` build of the same archive holds."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
from conftest import SAMPLES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from scale_bench import copy_run  # noqa: E402

CLI = [sys.executable, "-m", "mtabench.cli.main"]
# per-run incremental models (macros/per_run.sql) and every mart
PER_RUN = [
    "intermediate.int_maillog__run_stats",
    "intermediate.int_maillog__minutes",
    "intermediate.int_mailbox__minutes",
    "intermediate.int_postal__minutes",
    "intermediate.int_rabid__minutes",
    "intermediate.int_postal__events",
    "intermediate.int_queue__minutes",
    "intermediate.int_vmstat__minutes",
    "intermediate.int_saturation__events",
    "main.messages",
    "main.minutes",
    "main.events",
    "main.system_minutes",
    "main.system_device_minutes",
    "main.saturation_events",
    "main.error_bursts",
    "main.daily_capacity",
    "main.dtrace_samples",
    "main.dtrace_histograms",
    "main.comparisons",
    "main.comparison_levels",
]


def mtabench(data: Path, *args: str) -> None:
    env = {**os.environ, "MTABENCH_DATA": str(data)}
    env.pop("MTABENCH_DB", None)
    out = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, f"mtabench {' '.join(args)}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"


def compared_tables(con) -> list[str]:
    marts = [
        f"main.{t}"
        for (t,) in con.execute(
            "select table_name from duckdb_tables() where database_name = 'a' and schema_name = 'main'"
        ).fetchall()
    ]
    return sorted(set(marts) | set(PER_RUN))


def comparable_columns(con, table: str) -> str:
    """The table's columns, doubles rounded to 6 decimals: an average of doubles (iostat's
    per-minute means) differs in its last bits with the order DuckDB's threads add the rows in,
    which an incremental build (fewer rows scanned) changes."""
    schema, name = table.split(".")
    rows = con.execute(
        "select column_name, data_type from information_schema.columns"
        " where table_catalog = 'a' and table_schema = ? and table_name = ? order by ordinal_position",
        [schema, name],
    ).fetchall()
    return ", ".join(f'round("{c}", 6)' if t in ("DOUBLE", "FLOAT") else f'"{c}"' for c, t in rows)


def differences(a: Path, b: Path) -> dict[str, tuple[int, int]]:
    """Per table: rows only in a, rows only in b (EXCEPT ALL both ways)."""
    out = {}
    with duckdb.connect() as con:
        con.execute(f"attach '{a}' as a (read_only)")
        con.execute(f"attach '{b}' as b (read_only)")
        tables = compared_tables(con)
        assert "main.messages" in tables and "main.runs" in tables
        for t in tables:
            cols = comparable_columns(con, t)
            a_rows, b_rows = (f"select {cols} from {db}.{t}" for db in ("a", "b"))
            only_a = con.execute(f"select count(*) from ({a_rows} except all {b_rows})").fetchone()[0]
            only_b = con.execute(f"select count(*) from ({b_rows} except all {a_rows})").fetchone()[0]
            if only_a or only_b:
                out[t] = (only_a, only_b)
    return out


def messages_per_run(db: Path) -> dict[str, int]:
    with duckdb.connect(str(db), read_only=True) as con:
        return dict(con.execute("select run_id, count(*) from messages group by run_id").fetchall())


def serving_differences(a: Path, b: Path) -> dict[str, tuple[int, int]]:
    """Per published table of two serving files: rows only in a, only in b (EXCEPT ALL)."""
    out = {}
    with duckdb.connect() as con:
        con.execute(f"attach '{a}' as a (read_only)")
        con.execute(f"attach '{b}' as b (read_only)")
        names = {
            db: {
                f"{s}.{t}"
                for s, t in con.execute(
                    "select schema_name, table_name from duckdb_tables() "
                    "where database_name = ? and schema_name <> 'publish_state'",
                    [db],
                ).fetchall()
            }
            for db in ("a", "b")
        }
        assert names["a"] == names["b"]
        assert {"main.messages", "main.minutes", "main.runs", "raw.files"} <= names["a"]
        for t in sorted(names["a"]):
            only_a = con.execute(f"select count(*) from (from a.{t} except all from b.{t})").fetchone()[0]
            only_b = con.execute(f"select count(*) from (from b.{t} except all from a.{t})").fetchone()[0]
            if only_a or only_b:
                out[t] = (only_a, only_b)
    return out


def test_incremental_build_equals_full_refresh(tmp_path):
    from mtabench.pipeline.publish import publish_report

    archive = tmp_path / "archive"
    shutil.copytree(SAMPLES, archive)
    inc, full = tmp_path / "inc", tmp_path / "full"
    mtabench(inc, "ingest", str(archive))
    mtabench(inc, "build")
    before = messages_per_run(inc / "mtabench.duckdb")
    serving = inc / "serving" / "mtabench.duckdb"
    first = publish_report(inc / "mtabench.duckdb", serving)
    assert not first.incremental  # nothing to start from

    # add a run (a copy of a sample under a new run_id), change one, remove one
    copy_run(SAMPLES / "runs/a-baseline-t5", archive / "added/a-baseline-t5", 9)
    # and one in the samples' own folder, on their host: it joins their comparison group, so
    # the incremental build adds its pairs with the group's runs to comparisons
    again = archive / "runs/a-baseline-t5-again"
    copy_run(SAMPLES / "runs/a-baseline-t5", again, 8)
    toml = again / "run.toml"
    toml.write_text(toml.read_text().replace('hostname = "lab-8"', 'hostname = "vm"'))
    changed = archive / "runs/c-throttled-queue-backlog/maillog.gz"
    lines = gzip.decompress(changed.read_bytes()).splitlines(keepends=True)
    kept = lines[: len(lines) // 2]
    changed.unlink()  # the sample's own file stays as it is
    changed.write_bytes(gzip.compress(b"".join(kept)))
    shutil.rmtree(archive / "runs/e-smtp-source-s5")
    mtabench(inc, "ingest", str(archive))
    mtabench(inc, "build")

    mtabench(full, "ingest", str(archive))
    mtabench(full, "build", "--full-refresh")
    assert differences(inc / "mtabench.duckdb", full / "mtabench.duckdb") == {}
    with duckdb.connect(str(inc / "mtabench.duckdb"), read_only=True) as con:
        paired = con.execute(
            "select count(*) from comparison_levels "
            "where 'a-baseline-t5~c8' in (baseline_run_id, candidate_run_id)"
        ).fetchone()[0]
        group = con.execute(
            "select count(distinct candidate_run_id) from comparisons "
            "where baseline_run_id = 'a-baseline-t5~c8' and set_kind = 'run_throughput'"
        ).fetchone()[0]
    assert group >= 2 and paired == 2 * group * 6  # both directions, ministat's six levels

    # publishing onto the previous serving file replaces the added, changed and removed runs'
    # rows only (in a folder's marts, the changed folder's) and equals a full publish
    published = publish_report(inc / "mtabench.duckdb", serving)
    assert published.incremental
    assert published.stale_runs["messages"] == 4  # two added, changed, removed
    assert all(0 < n < len(before) for n in published.stale_runs.values() if n)
    again = publish_report(inc / "mtabench.duckdb", serving)  # nothing changed since: no run
    assert again.incremental and set(again.stale_runs.values()) == {0}
    whole = publish_report(inc / "mtabench.duckdb", tmp_path / "whole" / "serving.duckdb", full=True)
    assert not whole.incremental
    assert serving_differences(serving, whole.path) == {}

    after = messages_per_run(inc / "mtabench.duckdb")
    assert "a-baseline-t5~c9" in after and after["a-baseline-t5~c9"] == before["a-baseline-t5"]
    assert not any(r.startswith("e-smtp-source-s5") for r in after)
    assert any(r.startswith("e-smtp-source-s5") for r in before)
    # the cut maillog (half its lines) holds fewer messages
    assert after["c-throttled-queue-backlog"] < before["c-throttled-queue-backlog"]


def fingerprints(db: Path) -> dict[tuple[str, str], str]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("select model, run_id, fingerprint from per_run_state.builds").fetchall()
    return {(m, r): f for m, r, f in rows}


def test_a_macro_or_var_change_rebuilds_every_run(tmp_path, monkeypatch):
    """dbt's graph has no macro checksums: the CLI passes a hash of models/, seeds/, macros/
    and dbt_project.yml (mtabench/pipeline/dbt_code.py), so changed code rebuilds every run's rows."""
    from mtabench.pipeline.dbt_code import code_hash

    project = Path(__file__).resolve().parents[1] / "dbt_project"
    copy = tmp_path / "project"
    shutil.copytree(project, copy, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    before_hash = code_hash(copy)
    macro = copy / "macros" / "cross_engine.sql"
    macro.write_text(macro.read_text() + "\n{# changed #}\n")
    assert code_hash(copy) != before_hash
    # the models' and seeds' code too: the macro reads no checksum from dbt's graph then
    hashes = [code_hash(copy)]
    for changed in (copy / "models" / "marts" / "messages.sql", copy / "seeds" / "student_t.csv"):
        changed.write_text(changed.read_text() + "\n")
        hashes.append(code_hash(copy))
    assert len(set(hashes)) == 3, hashes

    data = tmp_path / "data"
    mtabench(data, "ingest", str(SAMPLES))
    mtabench(data, "build")
    first = fingerprints(data / "mtabench.duckdb")
    assert {m for m, _ in first} == {t.split(".")[1] for t in PER_RUN}
    # a build file from before int_maillog__message_lines was retired: its table and state go
    with duckdb.connect(str(data / "mtabench.duckdb")) as con:
        con.execute("create table intermediate.int_maillog__message_lines as select 1 as x")
        con.execute("insert into per_run_state.builds values ('int_maillog__message_lines', 'r', 'f')")
    mtabench(data, "build")  # same code: same fingerprints
    assert fingerprints(data / "mtabench.duckdb") == first
    with duckdb.connect(str(data / "mtabench.duckdb"), read_only=True) as con:
        left = con.execute(
            "select count(*) from information_schema.tables where table_name = 'int_maillog__message_lines'"
        ).fetchone()[0]
    assert left == 0

    monkeypatch.setenv("MTABENCH_DBT_CODE_HASH", "a-changed-macro")
    mtabench(data, "build")
    second = fingerprints(data / "mtabench.duckdb")
    assert second.keys() == first.keys()
    assert all(second[k] != first[k] for k in first), "a run kept its fingerprint after a macro change"
