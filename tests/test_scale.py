"""The scale benchmark at 2×, as a test of what it must not change: the archive
of bench/scale_bench.py (two copies of samples/, each its own lab), ingested copy by copy
and built through the real CLI. Figures are the benchmark's job; this checks the data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
from conftest import SAMPLES

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from scale_bench import build_archive, copy_run, run_folders  # noqa: E402

CLI = [sys.executable, "-m", "mtabench.cli.main"]
SENTINEL = "sentinel: left alone by an incremental build"


def mtabench(data: Path, *args: str) -> None:
    env = {**os.environ, "MTABENCH_DATA": str(data)}
    env.pop("MTABENCH_DB", None)
    out = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, f"mtabench {' '.join(args)}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"


def per_run(db: Path, table: str) -> dict[str, int]:
    with duckdb.connect(str(db), read_only=True) as con:
        return dict(con.execute(f"select run_id, count(*) from {table} group by run_id").fetchall())


def sample_run_ids() -> set[str]:
    """run_id of every sample folder, from its run.toml by grep, not by our manifest parser."""
    out = set()
    for folder in run_folders(SAMPLES):
        text = (folder / "run.toml").read_text() if (folder / "run.toml").exists() else ""
        found = [ln.split('"')[1] for ln in text.splitlines() if ln.startswith("run_id")]
        out.add(found[0] if found else folder.name)
    return out


def test_two_copies_build_like_one_and_one_more_run_touches_no_other(tmp_path, monkeypatch):
    import ingest.loader as loader

    archive, aside, data = tmp_path / "archive", tmp_path / "aside", tmp_path / "data"
    assert build_archive(archive, 2) == 2 * len(run_folders(SAMPLES))
    db = data / "mtabench.duckdb"

    # 1×: copy 1 alone
    aside.mkdir()
    shutil.move(archive / "copy-2", aside / "copy-2")
    mtabench(data, "ingest", str(archive))
    mtabench(data, "build")
    one = {t: per_run(db, t) for t in ("messages", "minutes", "events")}

    # 2×: copy 2 lands beside it, in-process so its deletes can be counted
    shutil.move(aside / "copy-2", archive / "copy-2")
    deletes: list[int] = []
    real_delete = loader.delete_file_rows

    def counted(con, file_id, *args, **kwargs):
        deletes.append(file_id)
        return real_delete(con, file_id, *args, **kwargs)

    monkeypatch.setattr(loader, "delete_file_rows", counted)
    report = loader.ingest_archive(archive, db, data / "work")
    assert not report.dropped
    assert len([r for r in report.runs if r.run_key.startswith("copy-2/")]) == len(run_folders(SAMPLES))
    assert deletes == []  # every file of copy 2 is new: nothing to delete
    mtabench(data, "build")

    ids = sample_run_ids()
    runs = per_run(db, "runs")
    for k in (1, 2):  # a folder holding several postal runs names them <run_id>#1, #2, ...
        missing = {r for r in ids if not any(x.split("#")[0] == f"{r}~c{k}" for x in runs)}
        assert not missing, f"copy {k}'s runs missing: {missing}"
    for table, counts in one.items():
        two = per_run(db, table)
        for run_id, n in counts.items():
            assert two[run_id] == n, (table, run_id)  # copy 1 as it was at 1×
            assert two[run_id.replace("~c1", "~c2")] == n, (table, run_id)  # copy 2 the same

    # one more run: an incremental build leaves every other run's rows alone. A sentinel
    # written into a copy-1 row of the per-run messages mart must survive (a rebuild of
    # that run would drop it), and every mart's rows of the other runs stay identical.
    victim, new_run = "a-baseline-t5~c1", "a-baseline-t5~c3"
    with duckdb.connect(str(db)) as con:
        con.execute(
            "update messages set sender = ? where run_id = ? and queue_id = "
            "(select min(queue_id) from messages where run_id = ?)",
            [SENTINEL, victim, victim],
        )
    before = tmp_path / "before.duckdb"
    shutil.copyfile(db, before)
    copy_run(SAMPLES / "runs/a-baseline-t5", archive / "copy-3/a-baseline-t5", 3)
    deletes.clear()
    loader.ingest_archive(archive, db, data / "work")
    assert deletes == []
    mtabench(data, "build")
    with duckdb.connect() as con:
        con.execute(f"attach '{before}' as a (read_only)")
        con.execute(f"attach '{db}' as b (read_only)")
        assert con.execute("select count(*) from b.messages where sender = ?", [SENTINEL]).fetchone()[0] == 1
        marts = [
            t
            for (t,) in con.execute(
                "select table_name from duckdb_columns() where database_name = 'b' "
                "and schema_name = 'main' and column_name = 'run_id' group by table_name order by 1"
            ).fetchall()
        ]
        assert {"messages", "minutes", "events", "runs"} <= set(marts)
        changed = {}
        for t in marts:
            sides = [f"(from {x}.{t} where run_id is distinct from '{new_run}')" for x in "ab"]
            n = con.execute(
                f"select (select count(*) from ({sides[0]} except all {sides[1]})),"
                f" (select count(*) from ({sides[1]} except all {sides[0]}))"
            ).fetchone()
            if n != (0, 0):
                changed[t] = n
        assert changed == {}
    messages = per_run(db, "messages")
    assert messages[new_run] == messages[victim] == one["messages"][victim]


def test_a_paged_table_is_measured_by_the_queries_superset_sends(built_db, data_dir):
    """The benchmark times a server-paginated table chart as Superset queries it: one ordered
    page and a row count (the whole result is never fetched). On the samples, each page holds
    rows of the whole filtered result, as many as a page or the result has, and the count is
    the result's length (ties in the order make which rows a page holds free)."""
    from collections import Counter

    from scale_bench import default_filtered_queries

    queries = default_filtered_queries()
    pages = {k.removesuffix(" first page"): v for k, v in queries.items() if k.endswith(" first page")}
    # the which-setting-won table (ranked differences) is paginated, with a default confidence
    assert any(k.startswith("which_setting_won_ranked") for k in pages), sorted(queries)
    serving = data_dir / "serving" / "mtabench.duckdb"  # what Superset reads: compare_runs() is there
    with duckdb.connect(str(serving), read_only=True) as con:
        for key, page_sql in pages.items():
            count = con.execute(queries[f"{key} row count"]).fetchone()[0]
            head, _, limit = page_sql.rpartition(" limit ")
            every = con.execute(head).fetchall()
            page = con.execute(page_sql).fetchall()
            assert count == len(every) > 0, key
            assert len(page) == min(int(limit), count), key
            assert not Counter(page) - Counter(every), key
        for sql in queries.values():  # every other query runs
            con.execute(sql).fetchall()


def test_every_chart_of_every_dashboard_is_measured_by_its_own_query(built_db, data_dir):
    """The benchmark's chart list holds every chart placed on a dashboard (a paged table twice:
    its page and its row count) and each query runs on the samples. A grouped chart returns a
    row per group: the error-events-by-code chart, one per (minute since start, code) of its
    dataset's error events."""
    import yaml
    from scale_bench import BOARDS, CHARTS, DATASETS, _paged, chart_queries

    queries = chart_queries()
    charts = {d["uuid"]: d for f in CHARTS.glob("*.yaml") if (d := yaml.safe_load(f.read_text()))}
    placed = [
        charts[item["meta"]["uuid"]]
        for f in BOARDS.glob("*.yaml")
        for key, item in yaml.safe_load(f.read_text())["position"].items()
        if key.startswith("CHART")
    ]
    paged = sum(1 for c in placed if _paged(c.get("params") or {}))  # raw tables paged on the server
    assert len(queries) == len(placed) + paged
    serving = data_dir / "serving" / "mtabench.duckdb"  # what Superset reads: compare_runs() is there
    with duckdb.connect(str(serving), read_only=True) as con:
        for sql in queries.values():
            con.execute(sql).fetchall()
        (key,) = [k for k in queries if k.startswith("Error events per minute by SMTP code")]
        events = yaml.safe_load((DATASETS / "mtabench" / "error_events_by_code.yaml").read_text())["sql"]
        (groups,) = con.execute(
            f"select count(*) from (select distinct minute_offset, code from ({events})"
            " where minute_offset is not null)"
        ).fetchone()
        assert groups > 0 and len(con.execute(queries[key]).fetchall()) == groups
