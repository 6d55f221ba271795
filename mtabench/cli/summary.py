"""The per-run summary table printed at the end of `mtabench run`."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

COLUMNS = [
    ("run_id", "run"),
    ("status", "status"),
    ("minutes", "min"),
    ("total_messages", "messages"),
    ("total_errors", "errors"),
    ("peak_msgs_per_min", "peak/min"),
    ("sustained_msgs_per_min", "median/min"),
    ("p10_msgs_per_min", "p10/min"),
    ("delivered_msgs_per_min", "delivered/min"),
    ("capacity_msgs_per_day", "sustainable/day"),
]


def summary_rows(db: Path) -> list[dict]:
    with duckdb.connect(str(db), read_only=True) as con:
        cur = con.execute(
            """select r.*, d.capacity_status, d.capacity_msgs_per_day
               from main.runs r left join main.daily_capacity d using (run_id)
               order by r.started_at nulls last, r.run_id"""
        )
        names = [c[0] for c in cur.description]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
    for r in rows:  # a run too short, or with damaged load output, is not extrapolated to a day
        if r["capacity_status"] in ("short", "partial"):
            r["capacity_msgs_per_day"] = r["capacity_status"]
    return rows


# rows of the table at most: a big archive's every run would scroll for minutes (7,080 at
# 236x the samples); the rest is one query away
MOST_ROWS = 40


def pick(rows: list[dict], loaded: set[str], most: int = MOST_ROWS) -> tuple[list[dict], int]:
    """The rows worth printing after a run, in table order, and how many were left out: the
    runs this ingest landed (a folder's run id or its `#n` runs), then runs that are not ok,
    then the most recently started."""
    if len(rows) <= most:
        return rows, 0

    def rank(i: int) -> tuple:
        r = rows[i]
        return (r["run_id"].split("#")[0] not in loaded, r["status"] == "ok", -i)

    keep = set(sorted(range(len(rows)), key=rank)[:most])
    return [r for i, r in enumerate(rows) if i in keep], len(rows) - most


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def render(rows: list[dict]) -> str:
    table = [[h for _, h in COLUMNS]] + [[_fmt(r[c]) for c, _ in COLUMNS] for r in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(COLUMNS))]
    lines = []
    for n, row in enumerate(table):
        cells = [
            c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells))
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def notes(db: Path, run_ids: set[str] | None = None) -> list[str]:
    """Lines under the table for what a user must not miss: why a run is not ok, a run.toml
    that could not be read (dates then come from file times), a run renamed on an id clash.
    run_ids: only these runs' notes (the runs the table shows)."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            """select r.run_id, r.status, r.status_reason, w.run_key, w.manifest_error,
                      w.has_manifest, w.inferred,
                      case when d.capacity_status in ('short', 'partial')
                           then d.capacity_basis end as short_basis
               from main.runs r
               left join raw.runs w on w.run_id = regexp_replace(r.run_id, '#[0-9]+$', '')
               left join main.daily_capacity d on d.run_id = r.run_id
               order by r.run_id"""
        ).fetchall()
    out = []
    seen_keys: set[str] = set()
    for run_id, status, reason, run_key, manifest_error, has_manifest, inferred, short_basis in rows:
        if run_ids is not None and run_id not in run_ids:
            continue
        if status != "ok":
            out.append(f"{run_id}: {status}: {reason or 'no reason recorded'}")
        if short_basis:
            out.append(f"{run_id}: no daily capacity: {short_basis}")
        if run_key is None or run_key in seen_keys:
            continue
        seen_keys.add(run_key)
        if manifest_error:
            how = "fields ignored" if has_manifest else "unreadable, defaults used"
            out.append(f"{run_id} ({run_key}/run.toml): {how}: {manifest_error}")
        if m := re.search(r"run_id '[^']*' already used .* is renamed \S+", inferred or ""):
            out.append(f"{run_id}: {m.group(0)}")
    return out


@contextmanager
def _reading(db: Path | duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to `db`, or the caller's own connection (left open)."""
    if isinstance(db, duckdb.DuckDBPyConnection):
        yield db
        return
    with duckdb.connect(str(db), read_only=True) as con:
        yield con


def landing_notes(db: Path | duckdb.DuckDBPyConnection, archive: Path | None = None) -> list[str]:
    """What the landing did not understand, named so it can be looked at: every file whose
    format was not recognised (recorded, not parsed), and the maillog lines of known programs
    (Postfix, Dovecot, ...) the parser filed as `other`, per file with the first such line.
    `archive`: where the files' paths are relative to (named in the listing command). `db`: the
    landing's file, or a connection to it."""
    with _reading(db) as con:
        cols = {
            r[0]
            for r in con.execute(
                "select column_name from information_schema.columns "
                "where table_schema = 'raw' and table_name = 'files'"
            ).fetchall()
        }
        unknown_files = [
            r[0]
            for r in con.execute(
                "select path from raw.files where status = 'unknown' order by path"
            ).fetchall()
        ]
        # the lines each file quarantined, with the first one's line and reason
        quarantined = []
        if "lines_quarantined" in cols:
            quarantined = con.execute(
                "select f.path, f.lines_quarantined, q.line_no, q.reason from raw.files f "
                "left join (select file_id, min_by(line_no, line_no) as line_no, "
                "min_by(reason, line_no) as reason from raw.quarantine group by 1) q using (file_id) "
                "where f.lines_quarantined > 0 order by f.path"
            ).fetchall()
        other = []
        if "lines_other_known" in cols:
            other = con.execute(
                "select path, lines_other_known, first_other_known_line from raw.files "
                "where format = 'maillog' and lines_other_known > 0 order by path"
            ).fetchall()
    out = []
    where = (lambda p: str(_located(archive, p))) if archive is not None else str
    if unknown_files:
        out.append(f"{len(unknown_files)} file(s) not recognised (recorded, not parsed):")
        out += [f"  {where(p)}" for p in unknown_files]
    if other:
        n = sum(r[1] for r in other)
        first = other[0]
        out.append(
            f"maillog: {n:,} line(s) of known programs not understood in {len(other)} file(s) "
            f"(first: {where(first[0])} line {first[2]}); list them: mtabench parse maillog --unknown FILE"
        )
        out += [f"  {where(p)}: {k:,} line(s), first at line {ln}" for p, k, ln in other]
    if quarantined:
        n = sum(r[1] for r in quarantined)
        out.append(
            f"{n:,} line(s) quarantined in {len(quarantined)} file(s), each with its reason in "
            "raw.quarantine:"
        )
        out += [
            f"  {where(p)}: {k:,} line(s), first at line {ln}: {why}"
            if ln is not None
            else f"  {where(p)}: {k:,} line(s)"
            for p, k, ln, why in quarantined
        ]
    return out


def _located(archive: Path, rel: str) -> Path:
    """A landed file's path: relative to the archive, or to its parent when the archive given
    was one run folder (its runs are named from the folder above)."""
    for base in (archive, archive.parent):
        if (base / rel).exists():
            return base / rel
    return archive / rel


def archive_notes(db: Path | duckdb.DuckDBPyConnection) -> list[str]:
    """Which archives (source roots) the landing holds runs of, and how many each: an ingest
    removes only its own archive's runs (ingest/run_archives.py)."""
    from ingest import run_archives

    with _reading(db) as con:
        held = run_archives.held(con)
    if not held:
        return []
    parts = [f"{a or 'archive not recorded'} ({n:,} run{'s' if n != 1 else ''})" for a, n in held]
    return [f"landing holds {len(held)} archive(s): " + "; ".join(parts)]
