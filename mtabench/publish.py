"""Publishing: write what readers read from a validated build to the serving path, atomically.

The serving file holds the marts (`main`), the reference seeds and the small ledger tables
(`raw.files`, `raw.runs`, `raw.quarantine`: what loaded, what failed, which lines were set
aside); the landing's bulk tables and the intermediate models stay in the build file, so
the serving file grows with the marts, not with the archive. It also holds the
compare_runs(a, b) table macro (mtabench.compare_sql): ministat's figures for any two runs.

Readers (Superset, ad-hoc SQL) open the serving file read-only. os.replace swaps
the directory entry in one step: open readers keep the old snapshot, the next
query sees the new file, nobody sees a half-written one or a lock.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import duckdb

from mtabench.compare_sql import create_compare_macro

PREFIX = ".publishing-"
# a temp copy without a readable pid (older releases) counts as stale after this long
STALE_AFTER_S = 3600
PUBLISHED_SCHEMAS = ("main", "reference")
PUBLISHED_RAW = ("files", "runs", "quarantine")


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


def _write_published_tables(db: Path, out: Path) -> None:
    with duckdb.connect(str(out)) as con:
        path = str(db).replace("'", "''")
        con.execute(f"attach '{path}' as build (read_only)")
        for schema, table in published_tables(con, "build"):
            con.execute(f'create schema if not exists "{schema}"')
            con.execute(f'create table "{schema}"."{table}" as from build."{schema}"."{table}"')
        con.execute("detach build")
        create_compare_macro(con)
        con.execute("checkpoint")


def publish(db: Path, serving: Path) -> Path:
    serving.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_copies(serving.parent)
    # a fresh name DuckDB creates (it refuses an existing empty file); the pid marks whose it is
    tmp = str(serving.parent / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}.duckdb")
    try:
        _write_published_tables(db, Path(tmp))
        os.chmod(tmp, 0o644)  # readers may run as another user
        # the data must be on disk before the name points at it, or a crash can serve a torn file
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, serving)
        _fsync_dir(serving.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        Path(tmp + ".wal").unlink(missing_ok=True)
        raise
    return serving
