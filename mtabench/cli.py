"""mtabench command line: run | scan | ingest | build | validate | publish | docs | compare | parse."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from mtabench.paths import REPO, Paths


def _progress(msg: str) -> None:
    print(msg, flush=True)


def cmd_ingest(args, paths: Paths) -> int:
    from ingest.loader import ingest_archive

    archive = Path(args.archive or REPO / "samples")
    if not archive.is_dir():
        print(f"archive {archive} is not a folder", file=sys.stderr)
        return 2
    _progress(f"ingest {archive} -> {paths.db}")
    only = set(args.run) if getattr(args, "run", None) else None
    parquet = getattr(args, "parquet", False) or getattr(args, "engine", "duckdb") == "spark"
    report = ingest_archive(
        archive,
        paths.db,
        paths.work_dir,
        progress=_progress,
        only=only,
        lines_dir=paths.landing_dir if parquet else None,
    )
    errors = report.errors
    _progress(f"  {len(report.runs)} runs, {len(report.files)} files, {len(errors)} file error(s)")
    if getattr(args, "parquet", False):  # the spark engine exports as its first build step
        from mtabench.spark_engine import export

        export(paths, progress=_progress)
    return 0


def cmd_scan(args, paths: Paths) -> int:
    from ingest.loader import scan_archive

    scans = scan_archive(Path(args.archive or REPO / "samples"), paths.db, paths.work_dir)
    for s in scans:
        if args.json:
            print(json.dumps({"run_key": s.run_key, "state": s.state, "message": s.message}))
        else:
            print(f"{s.state:9}  {s.run_key}" + (f"  ({s.message})" if s.message else ""))
    return 0


def cmd_publish(args, paths: Paths) -> int:
    from mtabench.publish import publish

    served = publish(paths.db, Path(args.serving) if args.serving else paths.serving_db)
    _progress(f"published {served}")
    return 0


def cmd_compare(args, paths: Paths) -> int:
    from mtabench.compare import UnknownSet, compare_sets

    try:
        print(compare_sets(paths.db, args.sets, args.confidence, args.welch, args.json), end="")
    except (UnknownSet, ValueError) as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_build(args, paths: Paths) -> int:
    from mtabench.dbt import run_dbt

    _progress("dbt build")
    run_dbt(paths, ["build"], progress=_progress)
    return 0


def cmd_docs(args, paths: Paths) -> int:
    from mtabench.dbt import run_dbt

    run_dbt(paths, ["docs", "generate"], progress=_progress)
    _progress(f"dbt docs in {paths.data_dir / 'dbt_target'}")
    return 0


def cmd_validate(args, paths: Paths) -> int:
    from mtabench.validate import validate

    _progress("validate (Great Expectations)")
    docs = validate(paths.db, paths.gx_dir, suites=args.suite or None)
    _progress(f"  all expectations met; Data Docs: {docs}")
    return 0


def cmd_run(args, paths: Paths) -> int:
    from mtabench.publish import publish
    from mtabench.summary import render, summary_rows

    t0 = time.monotonic()
    cmd_ingest(args, paths)
    built = paths.db
    if args.engine == "spark":
        from mtabench import spark_engine
        from mtabench.validate import validate

        _progress("dbt build on Spark (landing as Parquet)")
        built = spark_engine.build(paths, progress=_progress)
        _progress("validate (Great Expectations)")
        validate(paths.db, paths.gx_dir, suites=["landing"])
        validate(built, paths.gx_dir, suites=["marts"])
    else:
        cmd_build(args, paths)
        cmd_validate(args, paths)
    if not args.no_publish:
        served = publish(built, paths.serving_db)
        _progress(f"published {served}")
    _progress("")
    _progress(render(summary_rows(built)))
    _progress(f"\ndone in {time.monotonic() - t0:.1f} s; query it: duckdb -readonly {built}")
    return 0


def cmd_parse(args, paths: Paths) -> int:
    from ingest.parsers import ParseContext, get_parser
    from ingest.source import FileSource

    parser = get_parser(args.format)
    if args.file == "-":
        with tempfile.NamedTemporaryFile(delete=False, suffix=".stdin") as tmp:
            tmp.write(sys.stdin.buffer.read())
        path = Path(tmp.name)
    else:
        path = Path(args.file)
    source = FileSource(path, path.name)
    lines = list(source.lines())
    ledger = parser.parse(lines, ParseContext())
    for line_no, text in lines:
        out = {
            "line_no": line_no,
            "status": ledger.status.get(line_no),
            "items": ledger.items.get(line_no, []),
        }
        if args.text:
            out["text"] = text.rstrip("\r\n")
        print(json.dumps(out, ensure_ascii=False, default=str))
    if args.file == "-":
        path.unlink()
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mtabench", description=__doc__)
    sub = p.add_subparsers(dest="command", required=True)

    def add(name: str, func, help_: str, archive: bool = False) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, help=help_)
        if archive:
            sp.add_argument("archive", nargs="?", help="archive folder (default: the bundled samples/)")
        sp.add_argument("--db", help="DuckDB file (default: $MTABENCH_DB or data/mtabench.duckdb)")
        sp.set_defaults(func=func)
        return sp

    run = add("run", cmd_run, "ingest, build, validate and publish an archive", archive=True)
    run.add_argument("--no-publish", action="store_true", help="do not copy the result to the serving file")
    run.add_argument("--suite", action="append", help=argparse.SUPPRESS)
    run.add_argument(
        "--engine",
        choices=["duckdb", "spark"],
        default="duckdb",
        help="where dbt builds the marts: DuckDB (default) or Spark over the Parquet landing",
    )
    ing = add("ingest", cmd_ingest, "parse an archive into the raw landing tables", archive=True)
    ing.add_argument("--run", action="append", metavar="RUN_KEY", help="only this run (repeatable; see scan)")
    ing.add_argument(
        "--parquet",
        action="store_true",
        help="also write the Parquet landing ($MTABENCH_LANDING or data/landing)",
    )
    sc = add("scan", cmd_scan, "list the archive's runs as new / changed / unchanged / error", archive=True)
    sc.add_argument("--json", action="store_true", help="one JSON object per run")
    pub = add("publish", cmd_publish, "copy the DuckDB file atomically to the serving path")
    pub.add_argument("--serving", help="serving file (default: $MTABENCH_SERVING_DB or data/serving/)")
    add("build", cmd_build, "dbt build (staging models, marts, tests)")
    add("docs", cmd_docs, "dbt docs generate")
    v = add("validate", cmd_validate, "run the Great Expectations suites")
    v.add_argument("--suite", action="append", choices=["landing", "marts"])
    cmp_ = add("compare", cmd_compare, "ministat-style comparison of runs (full-minute throughput) or series")
    cmp_.add_argument("sets", nargs="+", metavar="SET", help="run_id, sample series name, or file of numbers")
    cmp_.add_argument(
        "-c", "--confidence", type=float, default=95.0, choices=[80.0, 90.0, 95.0, 98.0, 99.0, 99.5]
    )
    cmp_.add_argument(
        "--welch", action="store_true", help="Welch's t instead of ministat's pooled Student's t"
    )
    cmp_.add_argument("--json", action="store_true")
    pp = sub.add_parser("parse", help="print one JSON object per input line of FILE (or - for stdin)")
    pp.add_argument("format")
    pp.add_argument("file")
    pp.add_argument("--text", action="store_true", help="include the line text")
    pp.set_defaults(func=cmd_parse, db=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    paths = Paths.resolve(args.db)
    from mtabench.dbt import DbtFailed
    from mtabench.validate import ValidationFailed

    try:
        return args.func(args, paths)
    except ValidationFailed as exc:
        print(f"VALIDATION FAILED, nothing published:\n{exc}", file=sys.stderr)
        if exc.docs:
            print(f"Data Docs: {exc.docs}", file=sys.stderr)
        return 3
    except DbtFailed as exc:
        print(f"BUILD FAILED, nothing published:\n{exc}", file=sys.stderr)
        return 4


if __name__ == "__main__":
    sys.exit(main())
