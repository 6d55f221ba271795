"""Scale benchmark: grow an archive from samples/ and time every pipeline stage.

    uv run python bench/scale_bench.py --copies 32 [--keep DIR] [--skip-add]
    uv run python bench/scale_bench.py --copies 32 --keep DIR --add-only   # one more run, timed
    uv run python bench/scale_bench.py --keep DIR --rebuild   # build, validate, publish all anew
    uv run python bench/scale_bench.py --copies 236 --keep DIR --whole-run   # one `mtabench run`

Copy k of every sample run lands in `copy-K/<run>/` (its own experiment folder), with the
files hardlinked and a rewritten `run.toml`: run_id `<run_id>~cK` and hostname `lab-K`, as
separate labs would record them. Each stage runs as its own `mtabench` process with
MTABENCH_DATA pointing into the work folder; its wall time and peak RSS (the process and
everything it waited for: dbt, GX) come from wait4(2). Then it prints the biggest tables and
files, the cost of adding one new run to the grown archive end to end, and the median time of
every dashboard dataset query on the serving file: every row of it, and as a dashboard opens
it (its native filters' default values applied, as Superset filters a virtual dataset).

Current figures: bench/RESULTS.md. Since the per-run models are incremental, one more run's
dbt build is a small fraction of a full build; before, adding a run cost as much as the
whole pipeline. tests/test_scale.py runs this archive at 2x as a test.

Figures only; no assertion. The machine is shared and noisy: compare ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from proc_tree import watch  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "samples"
DATASETS = REPO / "dashboards" / "datasets"
CHARTS = REPO / "dashboards" / "charts"
BOARDS = REPO / "dashboards" / "dashboards"


@dataclass
class Stage:
    name: str
    wall_s: float
    peak_rss_mb: float
    exit_code: int


def run_folders(root: Path) -> list[Path]:
    """Folders that directly hold files: the runs of the sample archive."""
    return sorted({p.parent for p in root.rglob("*") if p.is_file()})


def rewrite_manifest(text: str, run_id: str, hostname: str) -> str:
    """Top-level run_id/hostname replaced (TOML: top-level keys stand before the first table)."""
    lines = [ln for ln in text.splitlines() if not re.match(r"\s*(run_id|hostname)\s*=", ln)]
    first_table = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("[")), len(lines))
    head = [f'run_id = "{run_id}"', f'hostname = "{hostname}"']
    return "\n".join(lines[:first_table] + head + lines[first_table:]) + "\n"


def copy_run(src: Path, dst: Path, copy_no: int) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    manifest = src / "run.toml"
    old = manifest.read_text() if manifest.exists() else ""
    m = re.search(r'^\s*run_id\s*=\s*"([^"]+)"', old, re.M)
    run_id = f"{m.group(1) if m else src.name}~c{copy_no}"
    for f in src.iterdir():
        if f.is_file() and f.name != "run.toml":
            os.link(f, dst / f.name)
    (dst / "run.toml").write_text(rewrite_manifest(old, run_id, f"lab-{copy_no}"))


def build_archive(archive: Path, copies: int) -> int:
    runs = run_folders(SAMPLES)
    for k in range(1, copies + 1):
        for src in runs:
            copy_run(src, archive / f"copy-{k}" / src.relative_to(SAMPLES).as_posix().replace("/", "__"), k)
    return len(runs) * copies


def stage_env(data: Path) -> dict[str, str]:
    """The environment of an `mtabench` process on the data folder `data`: the caller's, with
    any database path of its own removed so that both files live under `data`."""
    env = {**os.environ, "MTABENCH_DATA": str(data)}
    env.pop("MTABENCH_DB", None)
    env.pop("MTABENCH_SERVING_DB", None)
    return env


def timed(name: str, argv: list[str], env: dict[str, str], log: Path) -> Stage:
    """Run one stage; wall time and peak RSS of it and its reaped children (wait4)."""
    t0 = time.perf_counter()
    with log.open("ab") as out:
        out.write(f"\n### {name}: {' '.join(argv)}\n".encode())
        out.flush()
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
        _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    stage = Stage(name, time.perf_counter() - t0, usage.ru_maxrss / 1024, proc.returncode)
    print(
        f"  {name:<10} {stage.wall_s:8.1f} s  peak RSS {stage.peak_rss_mb:7.0f} MB  exit {stage.exit_code}",
        flush=True,
    )
    return stage


def first_folder_alone(work: Path, archive: Path) -> float:
    """Seconds to ingest one run folder of the archive alone into a new landing: what an ingest
    costs once whatever it lands (imports, the landing's schema, first statements). The
    per-folder cost beyond it is (ingest seconds - this) / (folders - 1)."""
    first = min(p for p in archive.glob("*/*") if p.is_dir())
    one = work / "one-folder"
    shutil.rmtree(one, ignore_errors=True)
    shutil.copytree(first, one / "archive" / first.parent.name / first.name, copy_function=os.link)
    env = stage_env(one / "data")
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "mtabench.cli.main", "ingest", str(one / "archive")],
        env=env,
        cwd=REPO,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    took = time.perf_counter() - t0
    shutil.rmtree(one, ignore_errors=True)
    return took


def print_ingest_per_folder(ingest_s: float, folders: int, alone_s: float) -> None:
    beyond = (ingest_s - alone_s) / max(folders - 1, 1)
    print(
        f"ingest per run folder: {ingest_s / folders * 1000:.0f} ms ({ingest_s:.1f} s / {folders});"
        f" one folder alone {alone_s:.2f} s; each folder beyond it {beyond * 1000:.0f} ms"
    )


def whole_run(work: Path, archive: Path) -> int:
    """`mtabench run` of the whole archive into a fresh data folder, as one process (what a user
    runs first): its wall time, its own stage split, and the peak of the summed RSS of it and
    every process it started (sampled every 0.25 s)."""
    data = work / "data-whole"
    shutil.rmtree(data, ignore_errors=True)
    env = stage_env(data)
    folders = sum(1 for _ in archive.glob("*/*"))
    print(f"load average {os.getloadavg()[0]:.1f}; {folders} run folders", flush=True)
    log = work / "whole-run.log"
    w = watch([sys.executable, "-m", "mtabench.cli.main", "run", str(archive)], env, log, cwd=REPO)
    wall, code = w.wall_s, w.exit_code
    last = next((ln for ln in reversed(log.read_text().splitlines()) if ln.startswith("done in")), "")
    print(f"`mtabench run` of the whole archive: {wall:.1f} s, exit {code}")
    print(f"  its own split: {last.split(';')[0] or '(no done line: see ' + str(log) + ')'}")
    if m := re.search(r"ingest ([0-9.]+)", last):
        print_ingest_per_folder(float(m.group(1)), folders, first_folder_alone(work, archive))
    print(
        f"  peak RSS, the process and its children summed: {w.peak_bytes / 2**20:.0f} MB"
        f" (one process alone, wait4: {w.own_peak_bytes / 2**20:.0f} MB)"
    )
    return code


def biggest_tables(db: Path, n: int = 8) -> list[tuple[str, int]]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(
            "select schema_name || '.' || table_name, estimated_size from duckdb_tables() "
            "order by estimated_size desc limit ?",
            [n],
        ).fetchall()


def dataset_queries() -> dict[str, str]:
    out = {}
    for f in sorted(DATASETS.rglob("*.yaml")):
        doc = yaml.safe_load(f.read_text())
        if doc.get("sql"):
            out[doc["table_name"]] = rendered(doc["sql"])
    return out


def _paged(params: dict) -> tuple[list[str], str, int] | None:
    """A raw table chart with server pagination asks for one page, ordered, and a row count:
    its columns, ORDER BY and page length; None for any other chart."""
    if not (params.get("server_pagination") and params.get("query_mode") == "raw"):
        return None
    order = [json.loads(o) for o in params.get("order_by_cols") or []]
    by = ", ".join(f"{col} {'asc' if ascending else 'desc'}" for col, ascending in order)
    return params["all_columns"], by, int(params.get("server_page_length") or 20)


def default_filtered_queries() -> dict[str, str]:
    """Each dataset as a dashboard opens it, where a native filter has a default value: the
    dataset's SQL as a subquery (as Superset wraps a virtual dataset) with every in-scope
    default filter on a column the dataset has. Key: "<dataset> (<dashboard slug>)". A table
    chart with server pagination is measured as Superset queries it: its first page (ORDER BY,
    LIMIT page length) and its row count, keys "... first page" and "... row count"."""
    datasets = {}
    for f in sorted(DATASETS.rglob("*.yaml")):
        doc = yaml.safe_load(f.read_text())
        if doc.get("sql"):
            datasets[doc["uuid"]] = (
                doc["table_name"],
                doc["sql"],
                {c["column_name"] for c in doc["columns"]},
            )
    chart_dataset, chart_paged = {}, {}
    for f in sorted(CHARTS.glob("*.yaml")):
        doc = yaml.safe_load(f.read_text())
        chart_dataset[doc["uuid"]] = doc["dataset_uuid"]
        chart_paged[doc["uuid"]] = _paged(doc.get("params") or {})
    out = {}
    for f in sorted(BOARDS.glob("*.yaml")):
        board = yaml.safe_load(f.read_text())
        defaults = _native_defaults(board)
        if not defaults:
            continue
        for key, item in board["position"].items():
            if not key.startswith("CHART"):
                continue
            meta = item["meta"]
            name, sql, columns = datasets[chart_dataset[meta["uuid"]]]
            sql = rendered(sql, {col: values for col, values, _ in defaults})
            where = [
                f"{col} in ({', '.join(repr(v) for v in values)})"
                for col, values, excluded in defaults
                if col in columns and meta.get("chartId") not in excluded
            ]
            if not where:
                continue
            filtered = f"from ({sql}) as virtual_table where {' and '.join(where)}"
            if paged := chart_paged[meta["uuid"]]:
                cols, by, page = paged
                order = f" order by {by}" if by else ""
                out[f"{name} ({board['slug']}) first page"] = (
                    f"select {', '.join(cols)} {filtered}{order} limit {page}"
                )
                out[f"{name} ({board['slug']}) row count"] = f"select count(*) {filtered}"
            else:
                out[f"{name} ({board['slug']})"] = f"select * {filtered}"
    return out


def _native_defaults(board: dict) -> list[tuple[str, list, set]]:
    """A dashboard's native filters with a default value: (column, values, excluded chart ids);
    a default run id of samples/ names copy 1 here (run ids `<id>~cK`)."""
    return [
        (
            flt["targets"][0]["column"]["name"],
            value + [f"{v}~c1" for v in value if isinstance(v, str)],
            set((flt.get("scope") or {}).get("excluded") or []),
        )
        for flt in (board.get("metadata") or {}).get("native_filter_configuration") or []
        if (value := ((flt.get("defaultDataMask") or {}).get("filterState") or {}).get("value"))
    ]


def _sql_value(v: object) -> str:
    return str(v) if isinstance(v, int | float) else "'" + str(v).replace("'", "''") + "'"


def rendered(sql: str, values: dict[str, list] | None = None) -> str:
    """A dataset's SQL as Superset renders its Jinja (ENABLE_TEMPLATE_PROCESSING) when a
    dashboard opens: `filter_values(column)` gives the native filters' values, `where_in` a
    SQL list."""
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["where_in"] = lambda vals: "(" + ", ".join(_sql_value(v) for v in vals) + ")"
    given = values or {}
    return env.from_string(sql).render(filter_values=lambda column: list(given.get(column, [])))


def chart_queries() -> dict[str, str]:
    """Every chart of every dashboard as Superset queries it when the dashboard opens: the
    chart's saved query (its query_context: columns, metrics, WHERE, filters, order, row
    limit) over its dataset's SQL as a subquery, grouped by its columns when it has metrics,
    with the dashboard's native filters' default values in place of the chart's own filter on
    the same column. A server-paginated table: its first page and its row count. Key:
    "<chart> (<dashboard slug>)"; Superset's pivots after the query are not included."""
    datasets = {}
    for f in sorted(DATASETS.rglob("*.yaml")):
        doc = yaml.safe_load(f.read_text())
        metrics = {m["metric_name"]: m["expression"] for m in doc.get("metrics") or []}
        datasets[doc["uuid"]] = (doc["sql"], {c["column_name"] for c in doc["columns"]}, metrics)
    charts = {
        doc["uuid"]: doc for f in sorted(CHARTS.glob("*.yaml")) if (doc := yaml.safe_load(f.read_text()))
    }
    out = {}
    for f in sorted(BOARDS.glob("*.yaml")):
        board = yaml.safe_load(f.read_text())
        defaults = _native_defaults(board)
        for key, item in board["position"].items():
            if not key.startswith("CHART"):
                continue
            chart = charts[item["meta"]["uuid"]]
            sql, columns, metrics = datasets[chart["dataset_uuid"]]
            q = json.loads(chart["query_context"])["queries"][0]
            native = {
                col: values
                for col, values, excluded in defaults
                if col in columns and item["meta"].get("chartId") not in excluded
            }
            sql = rendered(sql, {col: values for col, values, _ in defaults})
            where = [f"({w})" for w in [(q.get("extras") or {}).get("where")] if w]
            for flt in q.get("filters") or []:
                if flt["col"] in native or flt["col"] not in columns:
                    continue  # a native filter replaces it; Superset drops a filter on no column
                if flt["op"] not in ("IN", "NOT IN", "==", "!="):
                    raise ValueError(f"{chart['slice_name']}: filter op {flt['op']} not measured")
                vals = flt["val"] if isinstance(flt["val"], list) else [flt["val"]]
                neg = "not " if flt["op"] in ("NOT IN", "!=") else ""
                where.append(f"{flt['col']} {neg}in ({', '.join(map(_sql_value, vals))})")
            where += [f"{col} in ({', '.join(map(_sql_value, vals))})" for col, vals in native.items()]
            cols = [
                c if isinstance(c, str) else f'{c["sqlExpression"]} as "{c["label"]}"' for c in q["columns"]
            ]
            aggs = [
                f'{metrics[m]} as "{m}"' if isinstance(m, str) else f'{m["sqlExpression"]} as "{m["label"]}"'
                for m in q.get("metrics") or []
            ]
            source = f"from ({sql}) as virtual_table" + (f" where {' and '.join(where)}" if where else "")
            name = f"{chart['slice_name'][:60]} ({board['slug']})"
            if paged := _paged(chart.get("params") or {}):
                page_cols, by, page = paged
                order = f" order by {by}" if by else ""
                out[f"{name} first page"] = f"select {', '.join(page_cols)} {source}{order} limit {page}"
                out[f"{name} row count"] = f"select count(*) {source}"
                continue
            group = f" group by {', '.join(str(i + 1) for i in range(len(cols)))}" if aggs and cols else ""
            order = ""
            if aggs and q.get("order_desc", True):
                order = f" order by {len(cols) + 1} desc"
            out[name] = f"select {', '.join(cols + aggs)} {source}{group}{order} limit {int(q['row_limit'])}"
    return out


def query_medians(serving: Path, queries: dict[str, str], repeats: int = 5) -> dict[str, tuple[float, int]]:
    """Median ms and row count of each query, read-only as Superset reads."""
    out = {}
    with duckdb.connect(str(serving), read_only=True) as con:
        for name, sql in queries.items():
            times, rows = [], 0
            for _ in range(repeats):
                t0 = time.perf_counter()
                rows = len(con.execute(sql).fetchall())
                times.append((time.perf_counter() - t0) * 1000)
            out[name] = (statistics.median(times), rows)
    return out


def delete_costs(db: Path, repeats: int = 5) -> dict[str, float]:
    """Median ms to delete one landed file's rows (a postal CSV, the commonest changed file),
    from every per-file table (the old way) and from its format's tables only (now);
    each inside a transaction that is rolled back."""
    from ingest.landing import delete_file_rows

    out: dict[str, float] = {}
    with duckdb.connect(str(db)) as con:
        row = con.execute("select file_id, format from raw.files where format = 'postal' limit 1").fetchone()
        if row is None:
            return out
        for name, every in (("every table", True), ("its format's tables", False)):
            times = []
            for _ in range(repeats):
                con.execute("begin")
                t0 = time.perf_counter()
                delete_file_rows(con, row[0], row[1], every_table=every)
                times.append((time.perf_counter() - t0) * 1000)
                con.execute("rollback")
            out[name] = statistics.median(times)
    return out


def mb(path: Path) -> float:
    return path.stat().st_size / 1e6 if path.exists() else 0.0


def tree_mb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1e6 if folder.exists() else 0.0


def _add_copy(archive: Path, copies: int) -> None:
    """One more copy of the first sample run, under the next free copy number."""
    src = run_folders(SAMPLES)[0]
    copy_no = copies + 1
    while (archive / f"added-{copy_no}").exists():
        copy_no += 1
    copy_run(src, archive / f"added-{copy_no}" / src.name, copy_no)


def add_stages(work: Path, archive: Path, copies: int) -> list[Stage]:
    """Add one run and time `mtabench run` on the grown archive (what a user runs, one process:
    ingest, build, validate, publish); then add another and time the four stages each as its
    own process, for the split."""
    env = stage_env(work / "data")
    cli = [sys.executable, "-m", "mtabench.cli.main"]
    _add_copy(archive, copies)
    run = timed("add:run", [*cli, "run", str(archive)], env, work / "stages.log")
    print(f"adding one run end to end (`mtabench run`): {run.wall_s:.1f} s")
    _add_copy(archive, copies)
    split = [
        timed(f"add2:{name}", [*cli, *argv], env, work / "stages.log")
        for name, argv in (
            ("ingest", ["ingest", str(archive)]),
            ("build", ["build"]),
            ("validate", ["validate"]),
            ("publish", ["publish"]),
        )
    ]
    total = sum(s.wall_s for s in split)
    print(f"adding one more, stage by stage (ingest, build, validate, publish): {total:.1f} s")
    return [run, *split]


def add_one(work: Path, archive: Path, copies: int) -> int:
    add = add_stages(work, archive, copies)
    return 1 if any(s.exit_code for s in add) else 0


def rebuild(work: Path) -> int:
    """Build + validate + publish of a kept archive from scratch: every run's rows rebuilt,
    every run validated, every table written (each stage its own process)."""
    env = stage_env(work / "data")
    cli, log = [sys.executable, "-m", "mtabench.cli.main"], work / "stages.log"
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    stages = [
        timed("build", [*cli, "build", "--full-refresh"], env, log),
        timed("validate", [*cli, "validate", "--all-runs"], env, log),
        timed("publish", [*cli, "publish", "--full"], env, log),
    ]
    total, peak = sum(s.wall_s for s in stages), max(s.peak_rss_mb for s in stages)
    print(f"build + validate + publish: {total:.1f} s; peak RSS of any stage {peak:.0f} MB")
    return 1 if any(s.exit_code for s in stages) else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=2)
    ap.add_argument("--keep", type=Path, help="work folder to use and keep (default: a temp folder, removed)")
    ap.add_argument("--skip-add", action="store_true", help="skip the add-one-run measurement")
    ap.add_argument(
        "--add-only",
        action="store_true",
        help="with --keep DIR of an earlier run: only add one more run to its archive and time that",
    )
    ap.add_argument(
        "--rebuild",
        action="store_true",
        help="with --keep DIR of an earlier run: time build --full-refresh, validate --all-runs,"
        " publish --full",
    )
    ap.add_argument(
        "--whole-run",
        action="store_true",
        help="with --keep DIR: one `mtabench run` of its archive (grown with --copies if absent)"
        " into a fresh data folder DIR/data-whole, peak RSS summed over its processes",
    )
    args = ap.parse_args(argv)
    if args.whole_run:
        if not args.keep:
            ap.error("--whole-run needs --keep DIR")
        if not (args.keep / "archive").exists():
            build_archive(args.keep / "archive", args.copies)
        return whole_run(args.keep, args.keep / "archive")
    if args.rebuild:
        if not args.keep or not (args.keep / "data" / "mtabench.duckdb").exists():
            ap.error("--rebuild needs --keep DIR holding an archive built before")
        return rebuild(args.keep)
    if args.add_only:
        if not args.keep or not (args.keep / "data" / "mtabench.duckdb").exists():
            ap.error("--add-only needs --keep DIR holding an archive built before")
        return add_one(args.keep, args.keep / "archive", args.copies)

    work = args.keep or Path(tempfile.mkdtemp(prefix="mtabench-scale-"))
    archive, data, log = work / "archive", work / "data", work / "stages.log"
    if archive.exists():
        shutil.rmtree(archive)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    n_runs = build_archive(archive, args.copies)
    took = time.perf_counter() - t0
    print(f"archive: {args.copies} copies, {n_runs} run folders (hardlinks) in {took:.1f} s")
    print(f"work folder: {work}  (stage output in {log})")

    env = stage_env(data)
    cli = [sys.executable, "-m", "mtabench.cli.main"]
    stages = [
        timed("ingest", [*cli, "ingest", str(archive)], env, log),
        timed("build", [*cli, "build"], env, log),
        timed("validate", [*cli, "validate"], env, log),
        timed("publish", [*cli, "publish"], env, log),
    ]
    build_db, serving_db = data / "mtabench.duckdb", data / "serving" / "mtabench.duckdb"
    print_ingest_per_folder(stages[0].wall_s, n_runs, first_folder_alone(work, archive))
    after_ingest = sum(s.wall_s for s in stages[1:])
    peak = max(s.peak_rss_mb for s in stages)
    print(f"build + validate + publish: {after_ingest:.1f} s; peak RSS of any stage {peak:.0f} MB")

    if build_db.exists():
        with duckdb.connect(str(build_db), read_only=True) as con:
            counts = {
                t: con.execute(f"select count(*) from {t}").fetchone()[0]
                for t in ("main.runs", "main.messages", "main.comparisons", "raw.maillog")
                if con.execute(
                    "select count(*) from information_schema.tables "
                    "where table_schema || '.' || table_name = ?",
                    [t],
                ).fetchone()[0]
            }
        print("rows: " + ", ".join(f"{t} {n:,}" for t, n in counts.items()))
        runs = counts.get("main.runs")
        if runs and "main.comparisons" in counts:
            print(f"comparisons rows per run: {counts['main.comparisons'] / runs:.1f}")
        print("biggest tables (estimated rows):")
        for name, size in biggest_tables(build_db):
            print(f"  {name:<40} {size:>14,}")
    # the build is its DuckDB file and the Parquet landing beside it (the maillog's lines and
    # what the ingest derived from them: ingest/arrow_landing.py); the serving file holds
    # neither, only what readers read
    landing_mb = tree_mb(build_db.with_name(build_db.name + ".parquet"))  # one walk of its parts
    build_mb = mb(build_db) + landing_mb
    print(
        f"files: build DB {mb(build_db):.1f} MB + Parquet landing {landing_mb:.1f} MB,"
        f" serving DB {mb(serving_db):.1f} MB",
        end="",
    )
    if build_mb:
        print(f" (serving / build = {mb(serving_db) / build_mb:.2f})")
    else:
        print()

    if build_db.exists():
        costs = delete_costs(build_db)
        print("deleting a changed file's rows: " + ", ".join(f"{k} {v:.1f} ms" for k, v in costs.items()))

    if not args.skip_add:
        stages += add_stages(work, archive, args.copies)

    if serving_db.exists():
        print("dashboard dataset queries on the serving file, every row (median of 5):")
        for name, (ms, rows) in query_medians(serving_db, dataset_queries()).items():
            print(f"  {name:<28} {ms:8.1f} ms  {rows:>9,} rows")
        print("as a dashboard opens them, with its native filters' default values (median of 5):")
        for name, (ms, rows) in query_medians(serving_db, default_filtered_queries()).items():
            print(f"  {name:<48} {ms:8.1f} ms  {rows:>9,} rows")
        print("every chart of every dashboard, its own query as it opens (median of 5):")
        charts = query_medians(serving_db, chart_queries())
        for name, (ms, rows) in charts.items():
            print(f"  {name:<80} {ms:8.1f} ms  {rows:>9,} rows")
        print(f"  slowest chart query: {max(ms for ms, _ in charts.values()):.1f} ms")
    failed = [s.name for s in stages if s.exit_code]
    if failed:
        print(f"stages that failed: {', '.join(failed)} (see {log})")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
