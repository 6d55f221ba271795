"""Ingest an archive into the DuckDB landing schema, one transaction per file.

Unchanged files (same content hash, same parser version) are skipped, so
re-ingesting changes nothing; changed files replace their own rows only. A file
that cannot be read gets status 'error' and a message; the rest still loads.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from ingest import archive as arc
from ingest import folder_state, maillog_lines, maillog_run, run_archives, run_clock, settled
from ingest.arrow_landing import _lit, execute_values, sql_value
from ingest.detect import Detection, detect
from ingest.file_stat import known_sha, recorded_mtime_ns
from ingest.landing import delete_file_rows, ensure_schema, land_file, refresh_views
from ingest.line_guard import ParserBug, TooManyBadValues, blamed_line
from ingest.manifest import Manifest, ManifestError, parse_manifest, utc_offset_minutes
from ingest.parsers import PARSERS, ParseContext
from ingest.parsers.maillog import read_by_crate
from ingest.record_insert import insert_records
from ingest.resources import apply_limits
from ingest.source import BadInput, FileSource, count_lines

DETECT_VERSION = "detect-1"
ON_RECORD = "\0format on record"  # a Detection's note: taken from raw.files, the file not sniffed
# a run neither its run.toml nor its content dates (classic syslog stamps have no year)
NO_DATE = "no date: no run.toml date or start_utc and no stamp with a year in its files"
TOOL_BY_FORMAT = {"postal": "postal", "smtp_source": "smtp-source"}


@dataclass
class FileOutcome:
    path: str
    format: str | None
    status: str  # loaded | unchanged | empty | error | unsupported | unknown
    message: str | None = None
    lines: tuple[int, int, int, int] | None = None  # total, parsed, noise, quarantined


@dataclass
class RunOutcome:
    run_key: str
    run_id: str
    files: list[FileOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what the user must hear: renamed run, bad run.toml


@dataclass
class IngestReport:
    runs: list[RunOutcome] = field(default_factory=list)
    problems: list[FileOutcome] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # run keys the archive no longer has
    # runs not landed: another archive of the landing holds the same run key (run_archives)
    conflicts: list[FileOutcome] = field(default_factory=list)

    @property
    def files(self) -> list[FileOutcome]:
        return [f for r in self.runs for f in r.files] + self.problems + self.conflicts

    @property
    def errors(self) -> list[FileOutcome]:
        return [f for f in self.files if f.status == "error"]


def file_id_for(rel_path: str) -> int:
    return int(hashlib.sha1(rel_path.encode()).hexdigest()[:15], 16)


@dataclass
class RunScan:
    run_key: str
    state: str  # new | changed | unchanged | error | conflict | removed
    message: str | None = None

    @property
    def to_ingest(self) -> bool:
        """An ingest lands this run (again), or reports why it cannot (conflict): the CLI's
        `ingest --new` and the Airflow task."""
        return self.state in ("new", "changed", "error", "conflict")


def conflict_message(run_key: str, owner: str) -> str:
    return (
        f"run {run_key!r} is already landed from {owner}, which still holds it: not landed from "
        "here (rename one of the two, or remove it there, to land this one)"
    )


def _copying(archive: Path, item: arc.RunFolder | arc.BundleProblem, settle_s: float) -> bool:
    """Still being dropped into the archive (ingest/settled.py): not ingested yet."""
    if isinstance(item, arc.BundleProblem):
        return not settled.bundle_whole(item.path, settle_s, readable=False)
    if item.bundle:  # it unpacked: it reads to the end
        return not settled.bundle_whole(archive / item.bundle.split("!")[0], settle_s, readable=True)
    return not settled.folder_whole(item.path, [p for p, _ in item.files], settle_s)


def scan_archive(archive: Path, db_path: Path, work_dir: Path, settle_s: float = 0.0) -> list[RunScan]:
    """Which runs of the archive are new or changed against the landing DB (read-only).
    With `settle_s`, a run changed in the last `settle_s` seconds is `copying`: not whole yet."""
    known: dict[int, str] = {}
    stats: dict[int, tuple[int | None, int | None]] = {}
    if db_path.exists():
        with duckdb.connect(str(db_path), read_only=True) as con:
            cols = {
                r[0]
                for r in con.execute(
                    "select column_name from information_schema.columns "
                    "where table_schema = 'raw' and table_name = 'files'"
                ).fetchall()
            }
            if cols:
                mtime = "mtime_ns" if "mtime_ns" in cols else "null"  # a landing from before it
                for fid, sha, size, mt in con.execute(
                    f"select file_id, sha256, size_bytes, {mtime} from raw.files"
                ).fetchall():
                    known[fid] = sha
                    stats[fid] = (size, mt)
    known_runs: set[str] = set()  # this archive's runs on record (another archive's stay)
    owners: dict[str, str] = {}  # run key -> the archive that landed it
    if known:
        with duckdb.connect(str(db_path), read_only=True) as con:
            known_runs = run_archives.landed_by(con, archive)
            owners = run_archives.owners(con)

    def sha_of(path: Path, rel: str) -> tuple[int, str]:
        fid = file_id_for(rel)
        if fid in stats and known_sha(*stats[fid], path.stat()):
            return fid, known[fid]
        return fid, FileSource(path, rel).sha256()

    out = []
    for item in arc.discover(archive, arc.extraction_dir(work_dir)):
        if settle_s and _copying(archive, item, settle_s):
            key = item.rel_path if isinstance(item, arc.BundleProblem) else item.run_key
            out.append(RunScan(key, "copying", f"changed in the last {settle_s:g} s; ingested once whole"))
            continue
        if isinstance(item, arc.BundleProblem):
            fid, sha = sha_of(item.path, item.rel_path)
            state = "unchanged" if known.get(fid) == sha else "error"
            out.append(RunScan(item.rel_path, state, item.message))
            continue
        if owner := run_archives.holder_elsewhere(owners, archive, item.run_key):
            out.append(RunScan(item.run_key, "conflict", conflict_message(item.run_key, owner)))
            continue
        shas = [sha_of(p, rel) for p, rel in item.files]
        seen = [known.get(fid) for fid, _ in shas]
        if all(s is None for s in seen):
            state = "new"
        elif all(known.get(fid) == sha for fid, sha in shas):
            state = "unchanged"
        else:
            state = "changed"
        out.append(RunScan(item.run_key, state))
    present = {s.run_key for s in out}
    out += [RunScan(k, "removed", "no longer in the archive") for k in sorted(known_runs - present)]
    return out


def ingest_archive(
    archive: Path,
    db_path: Path,
    work_dir: Path,
    progress: Callable[[str], None] = lambda s: None,
    only: set[str] | None = None,
    lines_dir: Path | None = None,
    trust_stat: bool = True,
    drop_gone: bool | None = None,
) -> IngestReport:
    """Ingest every run (or only the run keys in `only`) of an archive.

    The runs this archive landed and no longer holds are removed (with `only`, only when
    `drop_gone`: `ingest --new`); runs other archives landed in the same landing stay.

    A file whose size and mtime_ns are those recorded when it was last hashed is neither
    hashed nor sniffed again (its hash and format are on record); `trust_stat=False`
    (`mtabench ingest --rehash`) reads every file, as after a change to format detection.

    With `lines_dir` (the Parquet landing), maillog files are also staged there as lines
    for the Spark parse (ingest/maillog_lines.py)."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    report = IngestReport()
    with duckdb.connect(str(db_path)) as con, arc.discovered(archive, arc.extraction_dir(work_dir)) as items:
        apply_limits(con)
        ensure_schema(con)
        folder_state.ensure(con)
        run_archives.ensure(con)
        ledger = Ledgers.load(con, trust_stat)
        folders = [i for i in items if isinstance(i, arc.RunFolder)]
        elsewhere = run_archives.held_elsewhere(con, archive, {f.run_key for f in folders})
        folders = [f for f in folders if f.run_key not in elsewhere]
        run_ids = assign_run_ids(folders, ledger, _ids_elsewhere(con, archive, ledger, folders))
        # the folders' states are trusted only with the stat shortcut, and not when maillogs
        # are also staged for Spark (the full path checks each file is staged)
        if trust_stat and lines_dir is None:
            ledger.states = folder_state.load(con)
        # the Parquet-landed tables' views are rebuilt once, not per file (binding a view
        # reads every part's footer); a killed ingest leaves them to the next ensure_schema
        try:
            for item in items:
                key = item.rel_path if isinstance(item, arc.BundleProblem) else item.run_key
                if only is not None and key not in only:
                    continue
                if isinstance(item, arc.BundleProblem):
                    out = _record_bundle_problem(con, item)
                    report.problems.append(out)
                    progress(f"  ! {item.rel_path}: {item.message}")
                    continue
                if key in elsewhere:  # left as the other archive landed it
                    message = conflict_message(key, elsewhere[key])
                    report.conflicts.append(FileOutcome(key, None, "error", message))
                    progress(f"  ! {key}: {message}")
                    continue
                run = _ingest_run(con, item, run_ids[item.run_key], lines_dir, ledger)
                report.runs.append(run)
                bad = [f for f in run.files if f.status == "error"]
                changed = sum(f.status != "unchanged" for f in run.files)
                progress(f"  {run.run_id}: {len(run.files)} files, {changed} (re)loaded, {len(bad)} errors")
                for f in bad:
                    progress(f"    ! {f.path}: {f.message}")
                for w in run.warnings:
                    if "already used" in w or w.startswith("run.toml fields"):  # unreadable: a file error
                        progress(f"    ! {w}")
            held = {i.rel_path if isinstance(i, arc.BundleProblem) else i.run_key for i in items}
            landed = {r.run_key for r in report.runs} | {p.path for p in report.problems}
            run_archives.claim(con, archive, landed)
            # what this archive landed and no longer holds goes; other archives' runs stay
            if drop_gone or (drop_gone is None and only is None):
                report.dropped = drop_runs_not_in(con, held, archive)
                for key in report.dropped:
                    progress(f"  - {key}: no longer in the archive; its rows were removed")
        finally:
            folder_state.save(con, ledger.new_states)
            refresh_views(con)
    return report


def drop_runs_not_in(con, seen: set[str], archive: Path) -> list[str]:
    """Remove every run (and bundle problem) `archive` landed whose key is not in `seen`;
    returns their keys."""
    gone = sorted(run_archives.landed_by(con, archive) - seen)
    for key in gone:
        con.execute("begin")
        rows = con.execute(f"select file_id, format from raw.files where run_key = {_lit(key)}").fetchall()
        for fid, fmt in rows:
            delete_file_rows(con, fid, fmt, every_table=False, view=False)
        folder_state.forget(con, key)
        run_archives.forget(con, key)
        con.execute(f"delete from raw.files where run_key = {_lit(key)}")
        con.execute(f"delete from raw.runs where run_key = {_lit(key)}")
        con.execute("commit")
    return gone


@dataclass
class KnownFile:
    """A file's raw.files row as the loader compares it."""

    sha256: str | None
    parser_version: str | None
    format: str | None
    status: str
    message: str | None
    size_bytes: int | None
    mtime_ns: int | None


@dataclass
class Ledgers:
    """raw.files and raw.runs read once per ingest (one point query per file and run cost
    ~1.4 ms each at 20 k files, ~35 s of a 236x re-ingest), kept current as rows are written."""

    files: dict[int, KnownFile]
    runs: dict[str, dict]
    trust_stat: bool = True
    states: dict[str, str] = field(default_factory=dict)  # run_key -> folder state on record
    new_states: dict[str, str | None] = field(default_factory=dict)  # to record at the end
    # run.toml read for the run ids (assign_run_ids): (manifest, error), read once an ingest
    manifests: dict[str, tuple[Manifest | None, str | None]] = field(default_factory=dict)

    @classmethod
    def load(cls, con, trust_stat: bool = True) -> Ledgers:
        files = {
            r[0]: KnownFile(*r[1:])
            for r in con.execute(
                "select file_id, sha256, parser_version, format, status, message, size_bytes, mtime_ns "
                "from raw.files"
            ).fetchall()
        }
        cur = con.execute("select * from raw.runs")
        names = [d[0] for d in cur.description]
        runs = {row[names.index("run_key")]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}
        return cls(files, runs, trust_stat)

    def unchanged(self, fid: int, st: os.stat_result) -> KnownFile | None:
        """The file's row if its size and mtime say it is the file hashed then."""
        prev = self.files.get(fid)
        if self.trust_stat and prev is not None and known_sha(prev.size_bytes, prev.mtime_ns, st):
            return prev
        return None


def assign_run_ids(
    folders: list[arc.RunFolder], ledger: Ledgers, taken: dict[str, str] | None = None
) -> dict[str, tuple[str, str | None]]:
    """run_key -> (run_id, note on a clash). Runs claiming one id (run.toml's run_id, else the
    folder name) are put in run-key order; the first keeps it, each other becomes
    `<id>@<6 hex of its run key>`. An id in `taken` (run id -> run key: a run another archive
    of the landing holds) is kept by that run: every run of this archive claiming it is
    renamed so, and two archives sharing a landing never give two runs one id."""
    taken = taken or {}
    claims: dict[str, list[str]] = {}
    for folder in folders:
        claims.setdefault(_claimed_id(folder, ledger), []).append(folder.run_key)
    out: dict[str, tuple[str, str | None]] = {}
    for rid, keys in claims.items():
        ordered = sorted(keys)
        holder = taken.get(rid)
        if holder is None:
            holder = ordered.pop(0)
            out[holder] = (rid, None)
        for key in ordered:
            short = hashlib.sha1(key.encode()).hexdigest()[:6]
            note = f"run_id {rid!r} already used by the run in {holder!r}; the run in {key!r} is renamed"
            out[key] = (f"{rid}@{short}", f"{note} {rid}@{short}")
    return out


def _ids_elsewhere(con, archive: Path, ledger: Ledgers, folders: list[arc.RunFolder]) -> dict[str, str]:
    """run id -> run key of the landed runs that are not this archive's: neither on record as
    landed by it nor among its folders (a run it landed and no longer holds keeps no id)."""
    mine = run_archives.landed_by(con, archive) | {f.run_key for f in folders}
    return {row["run_id"]: key for key, row in ledger.runs.items() if key not in mine and row.get("run_id")}


def _claimed_id(folder: arc.RunFolder, ledger: Ledgers) -> str:
    """The run id a folder asks for: its run.toml's run_id, else its name. A run.toml unchanged
    since it was read (size and mtime) is not parsed again: its manifest is on record."""
    toml = next(((p, rel) for p, rel in folder.files if rel.endswith("/run.toml")), None)
    if toml is None:
        return folder.default_run_id
    run = ledger.runs.get(folder.run_key)
    prev = ledger.unchanged(file_id_for(toml[1]), toml[0].stat())
    if run is not None and prev is not None and prev.format == "manifest":
        recorded = json.loads(run["manifest_json"]) if run.get("manifest_json") else {}
        return recorded.get("run_id") or folder.default_run_id
    manifest, _ = ledger.manifests[folder.run_key] = _read_manifest([FileSource(*toml)])
    return (manifest.run_id if manifest else None) or folder.default_run_id


def _ingest_run(
    con, folder: arc.RunFolder, run_id: tuple[str, str | None], lines_dir: Path | None, ledger: Ledgers
) -> RunOutcome:
    files = [FileSource(p, rel) for p, rel in folder.files]
    stats = {src.rel_path: src.path.stat() for src in files}
    state = folder_state.folder_state(stats) if not folder.bundle else None
    same = _unchanged_run(folder, stats, state, ledger) if state is not None else None
    if same is not None and same.run_id == run_id[0]:
        return same
    out = _ingest_run_files(con, folder, files, stats, run_id, lines_dir, ledger)
    ok = all(f.status != "error" for f in out.files)
    ledger.new_states[folder.run_key] = state if ok and lines_dir is None else None
    return out


def _unchanged_run(
    folder: arc.RunFolder, stats: dict[str, os.stat_result], state: str, ledger: Ledgers
) -> RunOutcome | None:
    """The run as recorded, if its folder's state is the one on record (ingest/folder_state.py)
    and each file's row still holds; else None (the full path)."""
    run = ledger.runs.get(folder.run_key)
    if run is None or ledger.states.get(folder.run_key) != state:
        return None
    outcomes = []
    for rel, st in stats.items():
        prev = ledger.unchanged(file_id_for(rel), st)
        if prev is None or prev.status == "error":
            return None
        outcomes.append(FileOutcome(rel, prev.format, "unchanged", prev.message))
    notes = run["inferred"].split("; ") if run["inferred"] else []
    out = RunOutcome(folder.run_key, run["run_id"], files=outcomes, notes=notes)
    out.warnings = _warnings(notes)
    return out


def _ingest_run_files(
    con,
    folder: arc.RunFolder,
    files: list[FileSource],
    stats: dict[str, os.stat_result],
    run_id: tuple[str, str | None],  # (run id, the note of a clash that renamed it)
    lines_dir: Path | None,
    ledger: Ledgers,
) -> RunOutcome:
    read = ledger.manifests.pop(folder.run_key, None)
    manifest, manifest_error = read if read is not None else _read_manifest(files)
    detections: dict[str, Detection | Exception] = {}
    for src in files:
        # a file unchanged since it was hashed was sniffed then: its format is on record
        # (a file that failed or was not recognised is sniffed again)
        prev = ledger.unchanged(file_id_for(src.rel_path), stats[src.rel_path])
        if prev is not None and prev.format is not None and prev.status != "error":
            detections[src.rel_path] = Detection(prev.format, note=ON_RECORD)
            continue
        detections[src.rel_path] = _sniff(src)
    run_row, notes = _run_row(folder, files, manifest, manifest_error, detections)
    rid, clash = run_id
    run_row["run_id"] = rid
    if clash:
        notes.append(clash)
    run_row["inferred"] = "; ".join(notes) or None
    _upsert_run(con, run_row, ledger)
    out = RunOutcome(folder.run_key, rid, notes=notes)
    out.warnings = _warnings(notes)
    start = run_row["start_utc"]
    ctx = ParseContext(
        run_key=folder.run_key,
        year=(start or run_row["run_date"]).year if (start or run_row["run_date"]) else None,
        run_date=run_row["run_date"],
        start_utc=start,
        end_utc=run_row["end_utc"],
        monitor_start_utc=run_row["monitor_start_utc"],
        timezone=run_row["timezone"],
        utc_offset_minutes=run_row["utc_offset_minutes"],
        commands={k: v for k, v in (manifest.tool if manifest else {}).items() if k.endswith("command")},
    )
    # the run's maillog files land together, as one stream (ingest/maillog_run.py)
    maillogs = [src for src in files if _is_maillog(src, detections, ctx, ledger)]
    landed = _ingest_maillogs(con, maillogs, stats, detections, ctx, ledger) if maillogs else {}
    for src in files:
        out.files.append(
            landed.get(src.rel_path)
            or _ingest_file(
                con,
                src,
                stats[src.rel_path],
                detections[src.rel_path],
                ctx,
                (manifest is not None, manifest_error),
                ledger,
            )
        )
        done = out.files[-1]
        if lines_dir is not None and done.format == "maillog" and done.status in ("loaded", "unchanged"):
            fid = file_id_for(src.rel_path)
            sha = con.execute(f"select sha256 from raw.files where file_id = {int(fid)}").fetchone()[0]
            if not maillog_lines.is_staged(lines_dir, ctx.run_key, fid, sha):
                maillog_lines.stage(lines_dir, src, fid, sha, ctx)
    return out


def _warnings(notes: list[str]) -> list[str]:
    """The notes a user must hear: a renamed run, a bad run.toml, a run without a date."""
    heard = ("run.toml unreadable", "run.toml fields", "no date")
    return [n for n in notes if "already used" in n or n.startswith(heard)]


def _format(det: Detection | Exception) -> str | None:
    return det.format if isinstance(det, Detection) else None


def _read_manifest(files: list[FileSource]) -> tuple[Manifest | None, str | None]:
    """The run's manifest and what was wrong with it: a run.toml that cannot be read at all
    gives (None, why); one with bad fields gives the manifest without them and their reasons."""
    for src in files:
        if not src.rel_path.endswith("/run.toml"):
            continue
        try:
            manifest = parse_manifest(src.data().decode("utf-8"))
        except UnicodeDecodeError as exc:
            return None, f"run.toml is not UTF-8 text: {exc}"
        except (ManifestError, BadInput, ValueError) as exc:
            return None, f"run.toml: {exc}" if not str(exc).startswith("run.toml") else str(exc)
        return manifest, "; ".join(manifest.problems) or None
    return None, None


def _sniff(src: FileSource) -> Detection | Exception:
    """The file's format from its head; bad input is kept as the file's error, not raised."""
    try:
        return detect(src)
    except BadInput as exc:
        return exc


def _parser_for(det: Detection | Exception, ctx: ParseContext):
    """The detected format, its parser (None if it has none) and the parser version a landed
    file records (the parser's version and the run context it parsed with)."""
    fmt = det.format if isinstance(det, Detection) else None
    parser = PARSERS.get(fmt or "")
    return fmt, parser, f"{parser.version}/{ctx.fingerprint()}" if parser else DETECT_VERSION


def _ingest_file(
    con,
    src: FileSource,
    st: os.stat_result,  # taken before hashing: a write meanwhile moves the mtime: hashed again
    det: Detection | Exception,
    ctx: ParseContext,
    manifest_state: tuple[bool, str | None],  # (run.toml readable, what was wrong with it)
    ledger: Ledgers,
):
    fid = file_id_for(src.rel_path)
    fmt, parser, version = _parser_for(det, ctx)
    prev = ledger.files.get(fid)
    if isinstance(det, Detection) and det.note == ON_RECORD and not (prev and prev.parser_version == version):
        det = _sniff(src)  # to be parsed again (a new parser version): sniffed as any file to land
        fmt, parser, version = _parser_for(det, ctx)
    stat_known = ledger.unchanged(fid, st) is not None
    sha = prev.sha256 if prev and stat_known else src.sha256()  # same size and mtime: on record
    if (
        prev
        and prev.sha256 == sha
        and prev.parser_version == version
        and (prev.format == fmt or isinstance(det, Exception))
    ):
        if not stat_known:  # same content, new stat (touched, copied): recorded, not hashed next time
            _record_stat(con, fid, prev, st)
        return FileOutcome(src.rel_path, prev.format, "unchanged", prev.message)
    row = _file_row(fid, src, st, ctx, sha, fmt, version)
    note = det.note if isinstance(det, Detection) else None
    con.execute("begin")
    try:
        if prev is not None:  # a file that never landed has no rows: no delete
            delete_file_rows(con, fid, prev.format, every_table=False, view=False)
        if isinstance(det, Exception):
            raise det
        if fmt == "manifest":
            readable, manifest_error = manifest_state
            status, msg, counts = (
                ("loaded", manifest_error, None) if readable else ("error", manifest_error, None)
            )
            if readable:
                n = count_lines(src.data())
                counts = (n, n, 0, 0)
        elif fmt == "empty":
            status, msg, counts = "empty", "empty file (0 bytes): nothing to parse", (0, 0, 0, 0)
        elif parser is not None:
            c = land_file(con, parser, fid, src, ctx, view=False)  # views: once, at the end
            counts = (c.total, c.parsed, c.noise, c.quarantined)
            row["lines_other_known"], row["first_other_known_line"] = c.other_known, c.first_other_known
            status, msg = "loaded", note
            if c.quarantined:
                msg = f"{c.quarantined} line(s) quarantined" + (f"; {note}" if note else "")
            row["encoding"] = src.encoding
        elif fmt is not None:
            status, msg, counts = (
                "unsupported",
                f"recognised as {fmt}; no parser for it in this version",
                None,
            )
        else:
            status, msg, counts = "unknown", "format not recognised; file recorded, not parsed", None
            insert_records(
                con,
                "quarantine",
                [
                    {
                        "line_no": None,
                        "item_no": None,
                        "reason": "unrecognised file format",
                        "text": src.rel_path,
                    }
                ],
                fid,
            )
    except (BadInput, UnicodeDecodeError, TooManyBadValues) as exc:  # bad input: the file is marked
        con.execute("rollback")
        con.execute("begin")
        if prev is not None:
            delete_file_rows(con, fid, prev.format, every_table=False, view=False)
        status, msg, counts = (
            "error",
            f"{type(exc).__name__}: {exc}" if not isinstance(exc, BadInput) else str(exc),
            None,
        )
    except ParserBug:
        con.execute("rollback")
        raise
    except Exception as exc:  # a parser bug, not bad input: fail the run, naming file and line
        con.execute("rollback")
        raise _parser_bug(src, exc) from exc
    row.update(status=status, message=msg)
    row.update(
        zip(
            ("lines_total", "lines_parsed", "lines_noise", "lines_quarantined"),
            counts or (None,) * 4,
            strict=False,
        )
    )
    con.execute(f"delete from raw.files where file_id = {int(fid)}")
    _insert_row(con, "files", row)
    con.execute("commit")
    ledger.files[fid] = KnownFile(sha, version, fmt, status, msg, st.st_size, row["mtime_ns"])
    return FileOutcome(src.rel_path, fmt, status, msg, counts)


def _is_maillog(src: FileSource, detections: dict, ctx: ParseContext, ledger: Ledgers) -> bool:
    """Whether the file lands as a maillog. A format on record is sniffed again when the
    parser version changed (as _ingest_file does)."""
    det = detections[src.rel_path]
    if isinstance(det, Detection) and det.note == ON_RECORD and det.format == "maillog":
        prev = ledger.files.get(file_id_for(src.rel_path))
        if not (prev and prev.parser_version == _parser_for(det, ctx)[2]):
            det = detections[src.rel_path] = _sniff(src)
    return _format(det) == "maillog"


def _ingest_maillogs(
    con,
    srcs: list[FileSource],
    stats: dict[str, os.stat_result],
    detections: dict[str, Detection | Exception],
    ctx: ParseContext,
    ledger: Ledgers,
) -> dict[str, FileOutcome]:
    """Land a run's maillog files as one stream, in one transaction: a message's rows depend
    on every file of the run, so when one changes (or one goes) they all land again. A file
    that is bad input gets its error and the others land without it."""
    fmt, parser, version = _parser_for(Detection("maillog"), ctx)
    files = []
    # a file never landed lands whatever its hash: a plain file is hashed in the parse's own
    # read of it (None here: land_run puts it in `digests`), any other in a thread while it
    # is parsed
    hashing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sha256")
    for src in srcs:
        fid, st = file_id_for(src.rel_path), stats[src.rel_path]
        prev = ledger.files.get(fid)
        stat_known = ledger.unchanged(fid, st) is not None
        known = prev.sha256 if prev and stat_known else None
        if known or prev is not None:
            sha = known or src.sha256()
        else:
            sha = None if read_by_crate(src.path) else hashing.submit(src.sha256)
        files.append((src, fid, st, prev, stat_known, sha))
    hashing.shutdown(wait=False)
    on_record = {
        r[0]
        for r in con.execute(
            f"select file_id from raw.files where run_key = {_lit(ctx.run_key)} and format = 'maillog'"
        ).fetchall()
    }
    if on_record == {f[1] for f in files} and all(
        prev and prev.sha256 == sha and prev.parser_version == version and prev.format == fmt
        for _, _, _, prev, _, sha in files
    ):
        out = {}
        for src, fid, st, prev, stat_known, _ in files:
            if not stat_known:  # same content, new stat: recorded, not hashed next time
                _record_stat(con, fid, prev, st)
            out[src.rel_path] = FileOutcome(src.rel_path, prev.format, "unchanged", prev.message)
        return out
    bad: dict[int, str] = {}
    while True:
        todo = [f for f in files if f[1] not in bad]
        con.execute("begin")
        try:
            # every maillog of the run on record: a file gone from the run goes with its rows
            # a file that never landed has no rows: no delete (each scans its tables)
            for _, fid, _, prev, _, _ in files:
                if prev is not None:
                    delete_file_rows(con, fid, prev.format or fmt, every_table=False, view=False)
            gone = on_record - {f[1] for f in files}
            for fid in gone:
                delete_file_rows(con, fid, fmt, every_table=False, view=False)
            if gone:
                con.execute(
                    f"delete from raw.files where file_id in ({', '.join(str(int(f)) for f in gone)})"
                )
            digests: dict[int, str] = {}
            counts = dict(maillog_run.land_run(con, [(f[1], f[0]) for f in todo], ctx, digests=digests))
        except maillog_run.FileFailed as failed:
            con.execute("rollback")
            exc = failed.__cause__
            if isinstance(exc, (BadInput, UnicodeDecodeError, TooManyBadValues)):
                bad[failed.file_id] = (
                    f"{type(exc).__name__}: {exc}" if not isinstance(exc, BadInput) else str(exc)
                )
                continue
            src = next(f[0] for f in files if f[1] == failed.file_id)
            if isinstance(exc, ParserBug):
                raise exc from None
            raise _parser_bug(src, exc) from exc
        except BaseException:
            con.execute("rollback")
            raise
        out = {}
        for src, fid, st, _, _, sha in files:
            sha = sha.result() if isinstance(sha, Future) else sha
            if sha is None:  # taken in the parse's read; a file that failed before its end: now
                sha = digests.get(fid) or src.sha256()
            det = detections[src.rel_path]
            note = det.note if isinstance(det, Detection) and det.note != ON_RECORD else None
            row = _file_row(fid, src, st, ctx, sha, fmt, version)
            if fid in bad:
                status, msg, c4 = "error", bad[fid], None
            else:
                c = counts[fid]
                c4 = (c.total, c.parsed, c.noise, c.quarantined)
                row["lines_other_known"], row["first_other_known_line"] = c.other_known, c.first_other_known
                row["encoding"] = src.encoding
                status, msg = "loaded", note
                if c.quarantined:
                    msg = f"{c.quarantined} line(s) quarantined" + (f"; {note}" if note else "")
            row.update(status=status, message=msg)
            row.update(
                zip(
                    ("lines_total", "lines_parsed", "lines_noise", "lines_quarantined"),
                    c4 or (None,) * 4,
                    strict=True,
                )
            )
            con.execute(f"delete from raw.files where file_id = {int(fid)}")
            _insert_row(con, "files", row)
            ledger.files[fid] = KnownFile(sha, version, fmt, status, msg, st.st_size, row["mtime_ns"])
            out[src.rel_path] = FileOutcome(src.rel_path, fmt, status, msg, c4)
        con.execute("commit")
        return out


def _file_row(
    fid: int, src: FileSource, st: os.stat_result, ctx: ParseContext, sha: str, fmt, version: str
) -> dict:
    """A landed file's raw.files row, before its status, message and line counts."""
    return {
        "file_id": fid,
        "run_key": ctx.run_key,
        "path": src.rel_path,
        "size_bytes": st.st_size,
        "mtime_ns": recorded_mtime_ns(st),
        "sha256": sha,
        "format": fmt,
        "parser_version": version,
        "encoding": None,
        "ingested_at": datetime.now(UTC).replace(tzinfo=None),
    }


def _record_stat(con, fid: int, prev: KnownFile, st: os.stat_result) -> None:
    """A file with its recorded content and a new stat: the stat recorded, so it is not hashed
    next time."""
    mtime = recorded_mtime_ns(st)
    con.execute(
        f"update raw.files set size_bytes = {int(st.st_size)}, mtime_ns = {sql_value(mtime)} "
        f"where file_id = {int(fid)}"
    )
    prev.size_bytes, prev.mtime_ns = st.st_size, mtime


def _parser_bug(src: FileSource, exc: BaseException) -> ParserBug:
    """A parser bug (not bad input), naming the file and the line it failed on."""
    line_no = blamed_line(exc.__traceback__, parsers_only=False)
    at = f" line {line_no}" if line_no is not None else ""
    return ParserBug(f"{src.rel_path}{at}: {type(exc).__name__}: {exc}")


def _record_bundle_problem(con, problem: arc.BundleProblem) -> FileOutcome:
    fid = file_id_for(problem.rel_path)
    st = problem.path.stat()
    row = {
        "file_id": fid,
        "run_key": problem.rel_path,
        "path": problem.rel_path,
        "size_bytes": st.st_size,
        "mtime_ns": recorded_mtime_ns(st),
        "sha256": FileSource(problem.path, problem.rel_path).sha256(),
        "format": "bundle",
        "parser_version": DETECT_VERSION,
        "status": "error",
        "message": problem.message,
        "ingested_at": datetime.now(UTC).replace(tzinfo=None),
    }
    prev = con.execute(f"select sha256, message from raw.files where file_id = {int(fid)}").fetchone()
    if not (prev and prev[0] == row["sha256"] and prev[1] == row["message"]):
        con.execute("begin")
        con.execute(f"delete from raw.files where file_id = {int(fid)}")
        _insert_row(con, "files", row)
        con.execute("commit")
    return FileOutcome(problem.rel_path, "bundle", "error", problem.message)


def _insert_row(con, table: str, row: dict) -> None:
    execute_values(con, f"insert into raw.{table} ({', '.join(row)}) values", [list(row.values())])


def _upsert_run(con, row: dict, ledger: Ledgers) -> None:
    prev = ledger.runs.get(row["run_key"])
    if prev is not None and all(prev.get(c) == v for c, v in row.items()):
        return
    con.execute(f"delete from raw.runs where run_key = {_lit(row['run_key'])}")
    _insert_row(con, "runs", row)
    ledger.runs[row["run_key"]] = dict(row)


def _run_row(folder, files, manifest: Manifest | None, manifest_error, detections) -> tuple[dict, list[str]]:
    notes: list[str] = []
    m = manifest or Manifest()
    if manifest is None:
        notes.append(f"run.toml unreadable ({manifest_error})" if manifest_error else "no run.toml")
    elif manifest_error:
        notes.append(f"run.toml fields ignored ({manifest_error})")
    run_id = m.run_id or folder.default_run_id
    if not m.run_id:
        notes.append("run_id from folder name")
    formats = {d.format for d in detections.values() if isinstance(d, Detection) and d.format}
    tool = m.tool.get("name") or next(
        (TOOL_BY_FORMAT[f] for f in sorted(formats) if f in TOOL_BY_FORMAT), None
    )
    if tool and not m.tool.get("name"):
        notes.append(f"tool {tool!r} inferred from file formats")
    run_date = m.date
    if run_date is None and m.start_utc is None and m.monitor_start_utc is not None:
        # only the samplers' start is known: that is the run's day
        run_date = m.monitor_start_utc.date()
    if run_date is None and m.start_utc is None:
        fmts = [(s, _format(detections[s.rel_path])) for s in files]
        if found := run_clock.content_date(fmts):
            run_date = found[0]
            notes.append(f"date {run_date} from {found[1]}")
        else:
            notes.append(NO_DATE)
    at = (
        m.start_utc.replace(tzinfo=UTC)
        if m.start_utc
        else (datetime(run_date.year, run_date.month, run_date.day, tzinfo=UTC) if run_date else None)
    )
    try:
        offset = utc_offset_minutes(m.timezone, at)
    except ManifestError as exc:
        notes.append(str(exc) + "; UTC assumed")
        offset = 0
    settings = json.dumps(m.changed_settings, ensure_ascii=False, sort_keys=True)
    return {
        "run_key": folder.run_key,
        "run_id": run_id,
        "source_kind": "bundle" if folder.bundle else "folder",
        "bundle": folder.bundle,
        "has_manifest": manifest is not None,
        "manifest_error": manifest_error,
        "inferred": None,
        "label": m.label,
        "tags_json": json.dumps(m.tags, ensure_ascii=False),
        "timezone": m.timezone,
        "utc_offset_minutes": offset,
        "run_date": run_date,
        "start_utc": m.start_utc,
        "end_utc": m.end_utc,
        "monitor_start_utc": m.monitor_start_utc,
        "monitor_end_utc": m.monitor_end_utc,
        "queue_drained_utc": m.queue_drained_utc,
        "duration_s": m.duration_s,
        "load_exit_code": m.load_exit_code,
        "hostname": m.hostname,
        "group_name": m.group,
        "baseline_run_id": m.baseline,
        "tool_name": tool,
        "tool_version": m.tool.get("version"),
        "tool_command": m.tool.get("command"),
        "mta_name": m.mta.get("name"),
        "mta_version": m.mta.get("version"),
        "settings_json": settings,
        "notes": m.notes,
        "manifest_json": m.to_json() if manifest else None,
    }, notes
