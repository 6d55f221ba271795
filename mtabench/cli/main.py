"""mtabench command line: run | scan | ingest | build | validate | publish | docs |
compare | spark-pack | parse | record."""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from mtabench.cli.logs import stage_log, warnings_and_logging_to
from mtabench.paths import REPO, BadSetting, Paths
from mtabench.record import command as record_command


def _progress(msg: str) -> None:
    print(msg, flush=True)


def cmd_ingest(args, paths: Paths) -> int:
    return _ingest(args, paths)[0]


def _ingest(args, paths: Paths) -> tuple[int, set[str]]:
    """Ingest the archive: exit code and the run ids of the runs that landed something."""
    from ingest.loader import ingest_archive

    archive = Path(args.archive or REPO / "samples")
    if not archive.is_dir():
        print(f"archive {archive} is not a folder", file=sys.stderr)
        return 2, set()
    only = None
    if getattr(args, "run", None):
        from mtabench.cli.run_select import resolve

        only, unknown = resolve(args.run, archive, paths.db, paths.work_dir)
        if unknown:
            print(
                f"no run of {archive} matches {', '.join(map(repr, unknown))}: give a run key "
                "(as `mtabench scan` lists it) or a run id",
                file=sys.stderr,
            )
            return 2, set()
    new = getattr(args, "new", False)
    if new:  # the Airflow task: scan and ingest in one process
        settle = getattr(args, "settle", 0.0) or 0.0
        parquet = getattr(args, "parquet", False)
        found, removed = _scan_for_ingest(archive, paths, getattr(args, "json", False), settle, parquet)
        only = found if only is None else found & only
        if not only and not removed:  # nothing new: the landing DB is not even opened for writing
            _progress("nothing new, changed or newly broken to ingest")
            return 0, set()
    _progress(f"ingest {archive} -> {paths.db}")
    parquet = getattr(args, "parquet", False) or getattr(args, "engine", "duckdb") == "spark"
    log = paths.log_dir / "ingest.log"
    # per-run lines go to the log; errors and warnings (lines with '!') also to the terminal
    with stage_log(log, lambda line: "!" in line, "ingest") as progress:
        report = ingest_archive(
            archive,
            paths.db,
            paths.work_dir,
            progress=progress,
            only=only,
            lines_dir=paths.landing_dir if parquet else None,
            trust_stat=not getattr(args, "rehash", False),
            drop_gone=True if new else None,  # a run moved out of the inbox leaves the landing
        )
    errors = report.errors
    _progress(
        f"  {len(report.runs)} runs, {len(report.files)} files, {len(errors)} file error(s); log: {log}"
    )
    for key in report.dropped:  # its archive no longer holds it: every row of it is gone
        _progress(f"  removed {key}: no longer in {archive}")
    import duckdb

    from mtabench.cli.summary import archive_notes, landing_notes

    with duckdb.connect(str(paths.db), read_only=True) as con:
        # which archives share the landing, then what was landed but not understood
        for line in archive_notes(con) + landing_notes(con, archive):
            _progress(f"  {line}")
    for run in report.runs:  # on stderr too, so the Airflow task log shows them as warnings
        for w in run.warnings:
            print(f"warning: run {run.run_key} -> {run.run_id}: {w}", file=sys.stderr, flush=True)
    if getattr(args, "json", False):  # one object per run key, for the Airflow task (its XCom)
        for run in report.runs:
            bad = [f for f in run.files if f.status == "error"]
            print(
                json.dumps(
                    {
                        "run_key": run.run_key,
                        "run_id": run.run_id,
                        "files": len(run.files),
                        "loaded": sum(f.status != "unchanged" for f in run.files),
                        "errors": [f"{f.path}: {f.message}" for f in bad],
                        "warnings": run.warnings,
                    }
                ),
                flush=True,
            )
        for p in report.problems + report.conflicts:
            print(
                json.dumps(
                    {
                        "run_key": p.path,
                        "run_id": None,
                        "files": 1,
                        "loaded": 0,
                        "errors": [f"{p.path}: {p.message}"],
                        "warnings": [],
                    }
                ),
                flush=True,
            )
    if getattr(args, "parquet", False):  # the spark engine exports as its first build step
        from mtabench.engines.spark.engine import export

        export(paths, progress=_progress)
    return 0, {run.run_id for run in report.runs if any(f.status != "unchanged" for f in run.files)}


def _scan_for_ingest(
    archive: Path, paths: Paths, as_json: bool, settle: float = 0.0, parquet: bool = False
) -> tuple[set[str], bool]:
    """The archive's new, changed and newly broken runs (what `scan` lists), printed per run,
    and whether a run it landed is gone from it. `settle`: a run changed in the last `settle`
    seconds is still being copied in, and waits. `parquet`: an unchanged run whose maillogs
    the Parquet landing lacks (an ingest without it landed the run) is ingested too."""
    from ingest.loader import scan_archive

    scans = scan_archive(archive, paths.db, paths.work_dir, settle_s=settle)
    # "scan" as the state's key: the Airflow task tells these lines from ingest's own by it
    _print_scans(scans, as_json, state_key="scan")
    found = {s.run_key for s in scans if s.to_ingest}
    if parquet:
        unchanged = {s.run_key for s in scans if s.state == "unchanged"}
        for key in sorted(unstaged := _unstaged_runs(paths) & unchanged):
            _progress(f"  {key}: maillog not in the Parquet landing yet; staged by this ingest")
        found |= unstaged
    return found, any(s.state == "removed" for s in scans)


def _unstaged_runs(paths: Paths) -> set[str]:
    """Run keys with a loaded maillog the Parquet landing has not staged for Spark (landed by
    an ingest without `--parquet`): ingesting them again stages those files, reading nothing else."""
    import duckdb

    from ingest import maillog_lines

    if not paths.db.exists():
        return set()
    with duckdb.connect(str(paths.db), read_only=True) as con:
        tables = (
            "select count(*) from information_schema.tables where table_schema = 'raw' and table_name = ?"
        )
        if not con.execute(tables, ["files"]).fetchone()[0]:
            return set()
        rows = con.execute(
            "select run_key, file_id, sha256 from raw.files where format = 'maillog' and status = 'loaded'"
        ).fetchall()
    return {key for key, fid, sha in rows if not maillog_lines.is_staged(paths.landing_dir, key, fid, sha)}


def _print_scans(scans, as_json: bool, state_key: str = "state") -> None:
    """One line per scanned run: `state  run_key  (message)`, or a JSON object that also says
    whether an ingest lands the run (`to_ingest`: the Airflow task reads it)."""
    for s in scans:
        if as_json:
            line = {state_key: s.state, "run_key": s.run_key, "message": s.message, "to_ingest": s.to_ingest}
            print(json.dumps(line), flush=True)
        else:
            print(f"{s.state:9}  {s.run_key}" + (f"  ({s.message})" if s.message else ""), flush=True)


def cmd_scan(args, paths: Paths) -> int:
    from ingest.loader import scan_archive

    scans = scan_archive(Path(args.archive or REPO / "samples"), paths.db, paths.work_dir)
    _print_scans(scans, args.json)
    return 0


def cmd_publish(args, paths: Paths) -> int:
    from mtabench.pipeline.publish import publish_report

    held = json.loads(args.held) if getattr(args, "held", None) else None
    if held is not None and not isinstance(held, dict):
        print("publish: --held takes a JSON object (run id -> reason)", file=sys.stderr)
        return 2
    _progress(
        publish_report(paths.db, paths.serving_db, full=getattr(args, "full", False), held=held).summary()
    )
    for run_id, reason in sorted((held or {}).items()):
        _progress(f"  ! {run_id}: {reason}; not published")
    return 0


def cmd_compare(args, paths: Paths) -> int:
    from mtabench.cli.compare import UnknownSet, compare_sets

    try:
        print(compare_sets(paths.db, args.sets, args.confidence, args.welch, args.json), end="")
    except (UnknownSet, ValueError) as exc:
        print(f"compare: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_build(args, paths: Paths, warm=None) -> int:
    from mtabench.pipeline.dbt import DbtFailed, is_notable, run_dbt

    log = paths.log_dir / "dbt.log"
    _progress("dbt build")
    with stage_log(log, is_notable, "dbt build") as progress:
        try:
            run_dbt(
                paths,
                ["build", *(["--full-refresh"] if getattr(args, "full_refresh", False) else [])],
                progress=progress,
                warm=warm,
            )
        except DbtFailed as exc:
            raise DbtFailed(f"{exc}\nfull log: {log}") from exc
    _progress(f"  log: {log}")
    return 0


def cmd_docs(args, paths: Paths) -> int:
    from mtabench.pipeline.dbt import run_dbt

    run_dbt(paths, ["docs", "generate"], progress=_progress)
    _progress(f"dbt docs in {paths.data_dir / 'dbt_target'}")
    return 0


def cmd_validate(args, paths: Paths) -> int:
    from expectations.validate import validate

    if getattr(args, "hold_back", False):  # the Airflow task: the held runs go to publish
        held = _validate_holding_back(args, paths)
        print(json.dumps({"held": held}), flush=True)
        return 0

    _progress("validate (Great Expectations)")
    # per-run checks read only the runs not validated yet at their current state
    # (docs/pipeline.md); --all-runs, or a --full-refresh run, reads every run. Either way a passing
    # suite is recorded, so the next validate reads only what changed after it
    every = getattr(args, "all_runs", False) or getattr(args, "full_refresh", False)
    with warnings_and_logging_to(paths.log_dir / "validate.log") as log:
        suites = args.suite or None
        docs = validate(paths.db, paths.gx_dir, suites=suites, changed_only=not every, record=True)
    _progress(f"  all expectations met; {_docs_note(docs)}; log: {log}")
    return 0


def _validate_holding_back(args, paths: Paths) -> dict[str, str]:
    """cmd_validate for `mtabench run`: a run whose own rows fail a check is held back
    (mtabench/pipeline/hold_back.py) and the suites run again without it; returns the held runs."""
    from expectations.validate import validate
    from mtabench.pipeline.hold_back import validate_holding_back

    _progress("validate (Great Expectations)")
    every = getattr(args, "all_runs", False) or getattr(args, "full_refresh", False)
    with warnings_and_logging_to(paths.log_dir / "validate.log") as log:
        suites = args.suite or None
        docs: list[Path | None] = [None]

        def attempt(held: set[str]) -> None:
            docs[0] = validate(paths.db, paths.gx_dir, suites=suites, changed_only=not every, held=held)

        held = validate_holding_back(attempt)
    for run_id, reason in sorted(held.items()):
        _progress(f"  ! {run_id}: {reason}; not published")
    met = "all expectations met" + (f" by the other runs ({len(held)} held back)" if held else "")
    _progress(f"  {met}; {_docs_note(docs[0])}; log: {log}")
    return held


def _docs_note(docs: Path | None) -> str:
    if docs is not None:
        return f"Data Docs: {docs}"
    # GX judges the rows DuckDB counted as failing (expectations/validate.py, _Gx)
    return "no failing row for Great Expectations to judge, so no Data Docs"


def cmd_run(args, paths: Paths) -> int:
    warm = None
    if args.engine != "spark":
        from mtabench.pipeline.dbt import WarmDbt

        # dbt imports itself and parses the project on the other core while ingest runs
        warm = WarmDbt.start(paths)
    try:
        return _run(args, paths, warm)
    finally:
        if warm is not None:  # unused if a stage before the build failed
            warm.close()


@dataclass
class _Laps:
    """Seconds per stage of `mtabench run`, printed with the total: where a slow run went."""

    start: float = field(default_factory=time.monotonic)
    laps: dict[str, float] = field(default_factory=dict)

    def lap(self, stage: str) -> None:
        self.laps[stage] = time.monotonic() - self.start - sum(self.laps.values())

    def __str__(self) -> str:
        split = ", ".join(f"{stage} {s:.1f}" for stage, s in self.laps.items())
        return f"{time.monotonic() - self.start:.1f} s ({split})"


def _run(args, paths: Paths, warm) -> int:
    from mtabench.cli.summary import landing_notes, notes, pick, render, summary_rows
    from mtabench.pipeline.publish import publish

    laps = _Laps()
    held: dict[str, str] = {}
    if getattr(args, "no_ingest", False):  # landed already (the Airflow DAGs' ingest task)
        if not paths.db.exists():
            print(f"nothing landed in {paths.db}: ingest first", file=sys.stderr)
            return 2
        rc, loaded = 0, set()
    else:
        rc, loaded = _ingest(args, paths)
        laps.lap("ingest")
    if rc:
        print("INGEST FAILED, nothing published", file=sys.stderr)
        return rc
    built = paths.db
    if args.engine == "spark":
        from expectations.validate import validate
        from mtabench.engines.spark import engine as spark_engine
        from mtabench.pipeline.dbt import is_notable

        _progress("dbt build on Spark (landing as Parquet)")
        log = paths.log_dir / "spark-build.log"
        with stage_log(log, lambda line: is_notable(line) or "maillog parsed" in line, "spark") as progress:
            built = spark_engine.build(
                paths, progress=progress, full_refresh=getattr(args, "full_refresh", False)
            )
        _progress(f"  log: {log}")
        _progress("validate (Great Expectations)")
        with warnings_and_logging_to(paths.log_dir / "validate.log") as log:
            validate(paths.db, paths.gx_dir, suites=["landing"])
            validate(built, paths.gx_dir, suites=["marts"])
        _progress(f"  all expectations met; log: {log}")
        laps.lap("build+validate")
    else:
        cmd_build(args, paths, warm=warm)
        laps.lap("build")
        held = _validate_holding_back(args, paths)
        laps.lap("validate")
    readable = built
    if not args.no_publish:
        readable = served = publish(built, paths.serving_db, held=held)
        laps.lap("publish")
        _progress(f"published {served}")
    _progress("")
    rows = summary_rows(built)
    for row in rows:  # the status the serving file has
        if row["run_id"].split("#")[0] in held:
            row["status"] = "held"
    shown, left_out = pick(rows, loaded)
    _progress(render(shown))
    if left_out:
        _progress(f"... and {left_out:,} more runs (this run's first, then any not ok): select * from runs")
    run_notes = [f"{run_id}: {reason}; not published" for run_id, reason in sorted(held.items())]
    run_notes += notes(built, {r["run_id"] for r in shown} if left_out else None)
    run_notes += landing_notes(paths.db, Path(args.archive or REPO / "samples"))
    if run_notes:
        _progress("\nnotes:\n" + "\n".join(f"  {n}" for n in run_notes))
    # the duckdb-cli package puts a `duckdb` binary in the project venv
    query = f"uv run duckdb -readonly {shlex.quote(str(readable))}"
    _progress(f"\ndone in {laps}; query it: {query}")
    return 0


def _json_safe(value):
    """JSON has no Infinity or NaN: print them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def cmd_spark_pack(args, paths: Paths) -> int:
    from mtabench.engines.spark.pack import ensure_pack

    t0 = time.monotonic()
    out = ensure_pack(Path(args.out) if args.out else paths.spark_dir / "executor-env.tar.gz")
    _progress(f"{out}: {out.stat().st_size / 1e6:.1f} MB ({time.monotonic() - t0:.1f} s)")
    return 0


def cmd_parse(args, paths: Paths) -> int:
    from ingest.line_guard import parse_guarded
    from ingest.parsers import ParseContext, get_parser
    from ingest.source import BadInput, FileSource
    from ingest.value_fit import fit_ledger

    parser = get_parser(args.format)
    if args.unknown and args.format != "maillog":
        print("parse: --unknown applies to the maillog format only", file=sys.stderr)
        return 2
    if args.file == "-":
        with tempfile.NamedTemporaryFile(delete=False, suffix=".stdin") as tmp:
            tmp.write(sys.stdin.buffer.read())
        path = Path(tmp.name)
    else:
        path = Path(args.file)
    try:
        source = FileSource(path, path.name)
        try:
            lines = list(source.lines())
        except (BadInput, OSError) as exc:
            print(f"parse: {path}: {exc}", file=sys.stderr)
            return 2
        # the same per-line decisions as ingest: bad values and misfits are quarantined
        ledger = parse_guarded(parser, lines, ParseContext(), where=str(path))
        fit_ledger(ledger, parser.tables)
        if args.unknown:
            return _print_unknown(ledger, lines)
        for line_no, text in lines:
            out = {
                "line_no": line_no,
                "status": ledger.status.get(line_no),
                "items": ledger.items.get(line_no, []),
            }
            if args.text:
                out["text"] = text.rstrip("\r\n")
            print(json.dumps(_json_safe(out), ensure_ascii=False, default=str, allow_nan=False))
    finally:
        if args.file == "-":
            path.unlink()
    return 0


def _print_unknown(ledger, lines) -> int:
    """`parse maillog --unknown`: the lines of known programs (Postfix, Dovecot, ...) the
    parser filed as kind `other`, as `line_no: text`; their count on stderr."""
    from mtabench_maillog import known_program

    n = 0
    for line_no, text in lines:
        items = ledger.items.get(line_no, [])
        if any(i.get("kind") == "other" and i.get("program") and known_program(i["program"]) for i in items):
            print(f"{line_no}: {text.rstrip(chr(13) + chr(10))}")
            n += 1
    print(f"{n} line(s) of known programs not understood", file=sys.stderr)
    return 0


SERVING_HELP = "serving file (default: $MTABENCH_SERVING_DB, else serving/<db name> beside the DB)"


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
    run.add_argument(
        "--no-ingest",
        action="store_true",
        help="build, validate and publish the landing as it stands (the archive names where its files live)",
    )
    run.add_argument("--serving-db", help=SERVING_HELP)
    run.add_argument("--suite", action="append", help=argparse.SUPPRESS)
    run.add_argument(
        "--engine",
        choices=["duckdb", "spark"],
        default="duckdb",
        help="where dbt builds the marts: DuckDB (default) or Spark over the Parquet landing",
    )
    full_refresh_help = "rebuild every run's rows (default: per-run models rebuild new and changed runs only)"
    run.add_argument("--full-refresh", action="store_true", help=full_refresh_help)
    all_runs_help = "validate every run (default: per-run checks read only runs not validated at their state)"
    run.add_argument("--all-runs", action="store_true", help=all_runs_help)
    ing = add("ingest", cmd_ingest, "parse an archive into the raw landing tables", archive=True)
    ing.add_argument(
        "--run",
        action="append",
        metavar="RUN",
        help="only this run: a run key (see scan) or a run id (repeatable)",
    )
    ing.add_argument(
        "--parquet",
        action="store_true",
        help="also write the Parquet landing ($MTABENCH_LANDING or data/landing)",
    )
    ing.add_argument("--json", action="store_true", help="one JSON object per ingested run on stdout")
    ing.add_argument(
        "--rehash",
        action="store_true",
        help="hash and sniff every file (default: a file with the size and mtime on record is not read)",
    )
    ing.add_argument(
        "--new", action="store_true", help="scan first; ingest only new, changed or newly broken runs"
    )
    ing.add_argument(
        "--settle",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="with --new: a run (folder or bundle) changed in the last SECONDS is still being copied; "
        "it waits for a later ingest",
    )
    sc = add("scan", cmd_scan, "list the archive's runs as new / changed / unchanged / error", archive=True)
    sc.add_argument("--json", action="store_true", help="one JSON object per run")
    pub = add("publish", cmd_publish, "copy the DuckDB file atomically to the serving path")
    pub.add_argument("--serving-db", "--serving", dest="serving_db", help=SERVING_HELP)
    pub.add_argument(
        "--full",
        action="store_true",
        help="write every table anew (default: update a copy of the previous serving file)",
    )
    pub.add_argument(
        "--held",
        metavar="JSON",
        help="runs held back by `validate --hold-back` (its JSON object): published as their status only",
    )
    bld = add("build", cmd_build, "dbt build (staging models, marts, tests)")
    bld.add_argument("--full-refresh", action="store_true", help=full_refresh_help)
    add("docs", cmd_docs, "dbt docs generate")
    v = add("validate", cmd_validate, "run the Great Expectations suites")
    v.add_argument("--suite", action="append", choices=["landing", "marts"])
    v.add_argument("--all-runs", action="store_true", help=all_runs_help)
    v.add_argument(
        "--hold-back",
        action="store_true",
        help="hold back a run failing its own checks (as `run` does); print the held runs as JSON",
    )
    cmp_ = add("compare", cmd_compare, "ministat-style comparison of runs (full-minute throughput) or series")
    cmp_.add_argument("sets", nargs="+", metavar="SET", help="run_id, sample series name, or file of numbers")
    cmp_.add_argument(
        "-c", "--confidence", type=float, default=95.0, choices=[80.0, 90.0, 95.0, 98.0, 99.0, 99.5]
    )
    cmp_.add_argument(
        "--welch", action="store_true", help="Welch's t instead of ministat's pooled Student's t"
    )
    cmp_.add_argument("--json", action="store_true")
    spk = sub.add_parser("spark-pack", help="build (or reuse) the executors' Python for a Spark cluster")
    spk.add_argument("--out", help="archive path (default: data/spark/executor-env.tar.gz)")
    spk.set_defaults(func=cmd_spark_pack, db=None)
    pp = sub.add_parser("parse", help="print one JSON object per input line of FILE (or - for stdin)")
    pp.add_argument("format")
    pp.add_argument("file")
    pp.add_argument("--text", action="store_true", help="include the line text")
    pp.add_argument(
        "--unknown",
        action="store_true",
        help="maillog: list only the lines of known programs the parser does not understand",
    )
    pp.set_defaults(func=cmd_parse, db=None)
    record_command.add_parser(sub)
    return p


# commands that write the database (or copy it): one at a time per database
LOCKED = {"run", "ingest", "build", "validate", "docs", "publish"}


def main(argv: list[str] | None = None) -> int:
    argv, load = record_command.split_load(sys.argv[1:] if argv is None else list(argv))
    args = build_parser().parse_args(argv)
    if load is not None:
        args.load = load
    paths = Paths.resolve(args.db, getattr(args, "serving_db", None))
    from mtabench.pipeline.lock import PipelineBusy, pipeline_lock

    try:
        if args.command in LOCKED:
            with pipeline_lock(paths.db):
                return args.func(args, paths)
        return args.func(args, paths)
    except BadSetting as exc:
        print(f"SETTING REFUSED, nothing done: {exc}", file=sys.stderr)
        return 2
    except PipelineBusy as exc:
        print(f"{exc}; not started", file=sys.stderr)
        return 6
    except Exception as exc:
        code = _failure(exc, paths)
        if code is None:
            raise
        return code


def _raised(exc: BaseException, module: str, name: str) -> bool:
    """Whether `exc` is `module.name`. An exception of a class can only have been raised once its
    module was imported, so the check imports nothing: a command does not pay for importing
    the modules of the others (validation, publishing, dbt: ~0.1 s)."""
    mod = sys.modules.get(module)
    return mod is not None and isinstance(exc, getattr(mod, name))


def _failure(exc: Exception, paths: Paths) -> int | None:
    """The exit code and message of a failure a command reports as such (None: a bug, raised)."""
    if _raised(exc, "mtabench.pipeline.publish", "ServingInUse"):
        print(f"PUBLISH REFUSED, the serving file is unchanged:\n{exc}", file=sys.stderr)
        return 6
    if _raised(exc, "duckdb", "IOException") and "lock" in str(exc).lower():
        print(f"another process holds {paths.db} ({exc}); not started", file=sys.stderr)
        return 6
    if _raised(exc, "expectations.validate", "ValidationFailed"):
        print(f"VALIDATION FAILED, nothing published:\n{exc}", file=sys.stderr)
        if exc.docs:
            print(f"Data Docs: {exc.docs}", file=sys.stderr)
        return 3
    if _raised(exc, "mtabench.pipeline.dbt", "DbtFailed"):
        print(f"BUILD FAILED, nothing published:\n{exc}", file=sys.stderr)
        return 4
    if _raised(exc, "ingest.line_guard", "ParserBug"):
        print(f"PARSER BUG, nothing published (the input is not to blame):\n{exc}", file=sys.stderr)
        return 5
    return None


if __name__ == "__main__":
    sys.exit(main())
