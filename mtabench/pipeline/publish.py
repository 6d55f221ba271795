"""Publishing: write what readers read from a validated build to the serving path, atomically.

The serving file holds the marts (`main`), the reference seeds and the small ledger tables
(`raw.files`, `raw.runs`, `raw.quarantine`: what loaded, what failed, which lines were set
aside); the landing's bulk tables and the intermediate models stay in the build file, so
the serving file grows with the marts, not with the archive. It also holds the
compare_runs(a, b) table macro (mtabench.stats.compare_sql): ministat's figures for any two runs.

Readers (Superset, ad-hoc SQL) open the serving file read-only. os.replace swaps
the directory entry in one step: open readers keep the old snapshot, the next
query sees the new file, nobody sees a half-written one or a lock.

Publish owns the serving file: readers open it read-only, so a `.wal` beside it can only be
left by a read-write session (a crashed one: a live one makes publish refuse, `ServingInUse`).
DuckDB replays a WAL onto whatever file has its name, so a stale one would be applied on top
of the freshly published tables; publish removes it first and says so.

Incremental publish: writing every mart again cost 23 s at 236x the samples
(595 MB), one new run or not. So a publish copies the previous serving file (a plain file
copy) and updates the copy: in a per-run mart (one the build keeps per run, with its
fingerprints in `per_run_state.builds`) only the rows of runs whose fingerprint changed, or
that are new or gone, are replaced; every other published table is replaced whole (they
are small). `publish_state` in the serving file records the fingerprints the rows were
published with and which build file they came from. A full write happens when there is no
previous serving file, it came from another build file, a published table's columns
changed or the table set did, or `full=True` (`mtabench publish --full`).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import struct
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from mtabench.pipeline.hold_back import hold_back
from mtabench.stats.compare_sql import create_compare_macro

PREFIX = ".publishing-"
# a temp copy without a readable pid (older releases) counts as stale after this long
STALE_AFTER_S = 3600
PUBLISHED_SCHEMAS = ("main", "reference")
PUBLISHED_RAW = ("files", "runs", "quarantine")
STATE = "publish_state"  # the serving file's own bookkeeping (not a build table)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def remove_stale_copies(folder: Path) -> list[Path]:
    """Delete `.publishing-<pid>-*.duckdb` left by a publish that was killed mid-copy."""
    removed = []
    for tmp in folder.glob(f"{PREFIX}*.duckdb"):
        pid_text = tmp.name[len(PREFIX) :].split("-", 1)[0]
        try:
            stale = not _alive(int(pid_text)) if pid_text.isdigit() else None
            if stale is None:
                stale = time.time() - tmp.stat().st_mtime > STALE_AFTER_S
            if stale:
                tmp.unlink()
                tmp.with_name(tmp.name + ".wal").unlink(missing_ok=True)  # DuckDB's, if killed mid-write
                removed.append(tmp)
        except FileNotFoundError:  # another publish cleaned it meanwhile
            continue
    return removed


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def published_tables(con, catalog: str) -> list[tuple[str, str]]:
    """(schema, table) of the build's tables that readers read, views left out."""
    return con.execute(
        """select table_schema, table_name from information_schema.tables
           where table_catalog = ? and table_type = 'BASE TABLE'
             and (list_contains(?, table_schema) or (table_schema = 'raw' and list_contains(?, table_name)))
           order by all""",
        [catalog, list(PUBLISHED_SCHEMAS), list(PUBLISHED_RAW)],
    ).fetchall()


def _attach_build(con, db: Path) -> None:
    path = str(db).replace("'", "''")
    con.execute(f"attach '{path}' as build (read_only)")


def _per_run_tables(con, tables: list[tuple[str, str]]) -> list[str]:
    """The published marts the build keeps per run: a `run_id` column and fingerprints in
    per_run_state.builds (DuckDB builds; a Spark build has none, so every table is whole)."""
    has_state = con.execute(
        "select count(*) from information_schema.tables where table_catalog = 'build' "
        "and table_schema = 'per_run_state' and table_name = 'builds'"
    ).fetchone()[0]
    if not has_state:
        return []
    models = {r[0] for r in con.execute("select distinct model from build.per_run_state.builds").fetchall()}
    with_run_id = {
        r[0]
        for r in con.execute(
            "select table_name from information_schema.columns where table_catalog = 'build' "
            "and table_schema = 'main' and column_name = 'run_id'"
        ).fetchall()
    }
    return sorted(t for s, t in tables if s == "main" and t in models and t in with_run_id)


def _record_state(con, db: Path, per_run: list[str]) -> None:
    """What this serving file was published from: the build file and each per-run mart's
    fingerprints, as the next publish compares them."""
    con.execute(f"create schema if not exists {STATE}")
    con.execute(f"create or replace table {STATE}.source (build_path varchar, published_at timestamp)")
    con.execute(f"insert into {STATE}.source values (?, now()::timestamp)", [str(Path(db).resolve())])
    con.execute(
        f"create or replace table {STATE}.runs "
        "(table_name varchar not null, run_id varchar not null, fingerprint varchar not null)"
    )
    if per_run:
        con.execute(
            f"insert into {STATE}.runs select model, run_id, fingerprint "
            "from build.per_run_state.builds where list_contains(?, model)",
            [per_run],
        )


def _copy_comments(con, tables: list[tuple[str, str]]) -> None:
    """The build's table and column comments (dbt descriptions, persist_docs) onto the
    published tables: `create table as` copies rows, not comments."""

    def quoted(text: str | None) -> str:
        return "null" if text is None else "'" + text.replace("'", "''") + "'"

    wanted = set(tables)
    for schema, table, comment in con.execute(
        "select schema_name, table_name, comment from duckdb_tables() where database_name = 'build'"
    ).fetchall():
        if (schema, table) in wanted:
            con.execute(f'comment on table "{schema}"."{table}" is {quoted(comment)}')
    for schema, table, column, comment in con.execute(
        "select schema_name, table_name, column_name, comment from duckdb_columns() "
        "where database_name = 'build' and comment is not null"
    ).fetchall():
        if (schema, table) in wanted:
            name = column.replace('"', '""')
            con.execute(f'comment on column "{schema}"."{table}"."{name}" is {quoted(comment)}')


def _write_published_tables(db: Path, out: Path) -> None:
    with duckdb.connect(str(out)) as con:
        _attach_build(con, db)
        tables = published_tables(con, "build")
        for schema, table in tables:
            con.execute(f'create schema if not exists "{schema}"')
            con.execute(f'create table "{schema}"."{table}" as from build."{schema}"."{table}"')
        _copy_comments(con, tables)
        _record_state(con, db, _per_run_tables(con, tables))
        con.execute("detach build")
        create_compare_macro(con)
        con.execute("checkpoint")


def _columns(con, catalog: str, tables: list[tuple[str, str]]) -> dict[tuple[str, str], list]:
    rows = con.execute(
        "select table_schema, table_name, column_name, data_type from information_schema.columns "
        "where table_catalog = ? order by table_schema, table_name, ordinal_position",
        [catalog],
    ).fetchall()
    wanted = set(tables)
    out: dict[tuple[str, str], list] = {t: [] for t in tables}
    for schema, table, col, typ in rows:
        if (schema, table) in wanted:
            out[(schema, table)].append((col, typ))
    return out


@dataclass
class Published:
    path: Path
    incremental: bool  # a copy of the previous serving file, updated
    stale_runs: dict[str, int] = field(default_factory=dict)  # per-run mart -> folders replaced
    whole: list[str] = field(default_factory=list)  # other tables, updated by row (_sync_rows)
    removed_wal: int | None = None  # bytes of a stale .wal removed beside the serving file

    def summary(self) -> str:
        if not self.incremental:
            text = f"published {self.path} (every table written)"
        else:
            runs = sum(self.stale_runs.values())
            text = (
                f"published {self.path} (incremental: {runs} run folder(s)' rows replaced in "
                f"{len(self.stale_runs)} per-run marts; {len(self.whole)} other tables updated row by row)"
            )
        if self.removed_wal is not None:
            text += f"; {wal_notice(self.path, self.removed_wal)}"
        return text


def wal_path(serving: Path) -> Path:
    return serving.with_name(serving.name + ".wal")


def wal_notice(serving: Path, size: int) -> str:
    return (
        f"removed a stale {wal_path(serving).name} ({size:,} bytes) beside {serving}: changes a "
        "read-write session made to the served file, not published, discarded"
    )


class ServingInUse(RuntimeError):
    """The serving file is open read-write by another process: publishing would hand its
    next WAL to the new file."""


_FLOCK = "hhqqixxxx"  # struct flock on 64-bit Linux: type, whence, start, len, pid


def _writer_pid(fd: int) -> int | None:
    """The pid holding DuckDB's write lock on the file (an fcntl lock), or None."""
    query = struct.pack(_FLOCK, fcntl.F_RDLCK, os.SEEK_SET, 0, 0, 0)
    l_type, _, _, _, pid = struct.unpack(_FLOCK, fcntl.fcntl(fd, fcntl.F_GETLK, query))
    return pid if l_type == fcntl.F_WRLCK else None


def _hold_against_writers(serving: Path) -> int | None:
    """A read lock on the serving file, as DuckDB's readers take: no read-write session can open
    it until the lock goes (when the returned fd is closed). None when there is no file."""
    try:
        fd = os.open(serving, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        pid = _writer_pid(fd)
        os.close(fd)
        raise ServingInUse(
            f"{serving} is open read-write by pid {pid if pid else '?'}: the serving file is the "
            "published copy, never edited in place; close that session, then publish again"
        ) from None
    return fd


def _remove_stale_wal(serving: Path) -> int | None:
    """Delete the .wal beside the serving file (the caller holds the file against writers, so
    no live session owns it); its size, or None when there was none."""
    wal = wal_path(serving)
    try:
        size = wal.stat().st_size
        wal.unlink()
    except FileNotFoundError:
        return None
    print(f"publish: {wal_notice(serving, size)}", file=sys.stderr, flush=True)
    return size


def _update_published_tables(db: Path, out: Path, done: Published) -> bool:
    """Bring a copy of the previous serving file up to the build; False (the copy left
    unfinished, to be discarded) where only a full write can: see the module docstring."""
    with duckdb.connect(str(out)) as con:
        catalog = con.execute("select current_database()").fetchone()[0]
        has_state = con.execute(
            "select count(*) from information_schema.tables where table_schema = ? and table_name = 'source'",
            [STATE],
        ).fetchone()[0]
        if not has_state:
            return False
        source = con.execute(f"select build_path from {STATE}.source").fetchone()
        if source is None or source[0] != str(Path(db).resolve()):
            return False
        _attach_build(con, db)
        tables = published_tables(con, "build")
        if published_tables(con, catalog) != tables:
            return False
        if _columns(con, "build", tables) != _columns(con, catalog, tables):
            return False
        per_run = _per_run_tables(con, tables)
        # no transaction: nobody sees this copy before the rename, and one spanning every
        # table made the inserts after deletes several times slower
        for schema, table in tables:
            name = f'"{schema}"."{table}"'
            if table in per_run and schema == "main":
                done.stale_runs[table] = _replace_changed_runs(con, table)
                # a net: rows of runs with no fingerprint would be missed; the counts say so
                if (
                    con.execute(f"select count(*) from {name}").fetchone()[0]
                    == con.execute(f"select count(*) from build.{name}").fetchone()[0]
                ):
                    continue
            _sync_rows(con, name)
            done.whole.append(f"{schema}.{table}")
        _copy_comments(con, tables)
        _record_state(con, db, per_run)
        con.execute("detach build")
        create_compare_macro(con)
        con.execute("checkpoint")
    return True


def _sync_rows(con, name: str) -> None:
    """Make a table's rows those of the build's table of that name (a multiset), deleting
    and inserting only rows that differ: rows are grouped by the hash of the whole row, and
    where a hash's count differs between the two, its rows are replaced. Writing a table
    anew costs far more than reading both (`comparison_levels`, 850 k rows at 236x: 5.4 s
    rewritten, 0.3 s read). One aggregation over both sides (+1 a build row, -1 a served
    one) is 0.5 s there; two and a full join of them were 0.7 s."""
    con.execute(
        f"""create or replace temp table _differ as
            select h from (
                select hash(t) as h, 1 as side from build.{name} as t
                union all
                select hash(t) as h, -1 as side from {name} as t
            )
            group by h
            having sum(side) <> 0"""
    )
    if con.execute("select count(*) from _differ").fetchone()[0]:
        con.execute(f"delete from {name} as t where hash(t) in (select h from _differ)")
        con.execute(f"insert into {name} from build.{name} as t where hash(t) in (select h from _differ)")


def _replace_changed_runs(con, table: str) -> int:
    """Replace a per-run mart's rows of the runs whose fingerprint differs from the one they
    were published with (new, changed, gone). A folder's `#n` runs go together, as the build
    keeps them (dbt_project/macros/per_run.sql): the key is the run id before any '#'."""
    con.execute(
        f"""create or replace temp table _stale as
            select distinct split_part(coalesce(b.run_id, p.run_id), '#', 1) as folder
            from (select run_id, fingerprint from build.per_run_state.builds where model = $t) as b
            full outer join (select run_id, fingerprint from {STATE}.runs where table_name = $t) as p
                on b.run_id = p.run_id
            where b.fingerprint is distinct from p.fingerprint""",
        {"t": table},
    )
    folders = [r[0] for r in con.execute("select folder from _stale order by 1").fetchall()]
    # rows without a run id (none are expected) are replaced every time
    stale = "run_id is null"
    if folders:
        # literals, not the subquery: DuckDB then filters the scan instead of joining every
        # row to _stale (one run's insert into `messages` at 236x: 0.4 s instead of 3.3 s)
        listed = ", ".join("'" + f.replace("'", "''") + "'" for f in folders)
        if len(folders) > 2000:
            listed = "select folder from _stale"
        stale += f" or split_part(run_id, '#', 1) in ({listed})"
    con.execute(f'delete from main."{table}" where {stale}')
    con.execute(f'insert into main."{table}" from build.main."{table}" where {stale}')
    return len(folders)


def publish(db: Path, serving: Path, full: bool = False, held: dict[str, str] | None = None) -> Path:
    """Publish the build `db` to `serving`: incrementally onto a copy of the previous serving
    file where it can, else (or with `full`) every table written anew. `held`: runs held
    back (mtabench/pipeline/hold_back.py), published as their status only."""
    return publish_report(db, serving, full, held).path


def publish_report(
    db: Path, serving: Path, full: bool = False, held: dict[str, str] | None = None
) -> Published:
    """`publish`, saying how it went."""
    serving.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_copies(serving.parent)
    guard = _hold_against_writers(serving)  # a live read-write session: refuse before any work
    if guard is not None:
        os.close(guard)
    # a WAL means a read-write session wrote to the served file, maybe checkpointing into it
    # too: the file is no longer what was published, so no copy of it is updated
    full = full or wal_path(serving).exists()
    # a fresh name DuckDB creates (it refuses an existing empty file); the pid marks whose it is
    tmp = str(serving.parent / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}.duckdb")
    try:
        done = Published(serving, incremental=False)
        updated = False
        if not full and serving.is_file():
            shutil.copyfile(serving, tmp)
            done = Published(serving, incremental=True)
            try:
                updated = _update_published_tables(db, Path(tmp), done)
            except duckdb.Error:  # a copy it cannot update (damaged, an older DuckDB): write anew
                updated = False
            if not updated:
                done = Published(serving, incremental=False)
                Path(tmp).unlink()
                Path(tmp + ".wal").unlink(missing_ok=True)
        if not updated:
            _write_published_tables(db, Path(tmp))
        if held:
            hold_back(Path(tmp), held, STATE)
        # readers may run as another user; nobody writes it in place (a read-write open by the
        # owner fails too, unless root): a change is a new publish
        os.chmod(tmp, 0o444)
        # the data must be on disk before the name points at it, or a crash can serve a torn file
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        # Order: hold the old file against read-write sessions, remove its stale WAL, fsync the
        # folder, then rename. DuckDB pairs a file with the WAL of the same name when it opens
        # it, so the WAL must be gone before the new file takes the name: a reader opening in
        # between gets the old file without the WAL (the last published state), after it the new
        # file alone; were the rename first, a reader could replay the old WAL onto the new file.
        guard = _hold_against_writers(serving)
        try:
            done.removed_wal = _remove_stale_wal(serving)
            if done.removed_wal is not None:
                _fsync_dir(serving.parent)
            os.replace(tmp, serving)
            _fsync_dir(serving.parent)
        finally:
            if guard is not None:
                os.close(guard)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        Path(tmp + ".wal").unlink(missing_ok=True)
        raise
    return done
