"""Which archive (source root) landed each run, so one landing can hold several archives.

`mtabench run samples` and the Airflow inbox share data/ and its landing: each ingest removes
only the runs its own archive no longer has; a run another archive landed stays. A run landed
before archives were recorded has none on record: no archive removes it until one claims it
(any ingest of an archive holding its run key does)."""

from __future__ import annotations

from pathlib import Path

from ingest.arrow_landing import _lit

DDL = "run_key VARCHAR NOT NULL, archive VARCHAR NOT NULL"


def root_of(archive: Path) -> str:
    return str(archive.resolve())


def ensure(con) -> None:
    con.execute(f"create table if not exists raw.run_archives ({DDL})")


def claim(con, archive: Path, run_keys: set[str]) -> None:
    """The archive holds these run keys now (a key moves to the archive that last held it)."""
    if not run_keys:
        return
    # literals, not bound parameters: DuckDB's first binding imports pandas (arrow_landing._lit)
    keys, root = sorted(run_keys), _lit(root_of(archive))
    con.execute(f"delete from raw.run_archives where run_key in ({', '.join(_lit(k) for k in keys)})")
    con.execute(f"insert into raw.run_archives values {', '.join(f'({_lit(k)}, {root})' for k in keys)}")


def landed_by(con, archive: Path) -> set[str]:
    """Run keys (and bundle problems) on record as landed by this archive."""
    if not _recorded(con):
        return set()
    return {
        r[0]
        for r in con.execute(
            f"select run_key from raw.run_archives where archive = {_lit(root_of(archive))}"
        ).fetchall()
    }


def owners(con) -> dict[str, str]:
    """run key -> the archive on record as landing it."""
    if not _recorded(con):
        return {}
    return dict(con.execute("select run_key, archive from raw.run_archives").fetchall())


def still_holds(owner: str, run_key: str) -> bool:
    """The archive `owner` still has the run's folder or bundle (a run key is archive-relative:
    "runs/x", "x.tar.gz!x"; an archive that is itself a run folder has its name as the key)."""
    root, top = Path(owner), run_key.split("!", 1)[0]
    return (root / top).exists() or (root.name == top and root.is_dir())


def holder_elsewhere(owners: dict[str, str], archive: Path, run_key: str) -> str | None:
    """The other archive that landed `run_key` (`owners`: as `owners` returns) and still holds
    it, or None. Such a run is not landed from `archive`: the two would be one run (the same
    key, so the same file ids) with two contents, each ingest replacing the other's."""
    owner = owners.get(run_key)
    if owner is None or owner == root_of(archive) or not still_holds(owner, run_key):
        return None
    return owner


def held_elsewhere(con, archive: Path, run_keys: set[str]) -> dict[str, str]:
    """Run keys of `archive` another archive landed and still holds -> that archive."""
    owned = owners(con)
    found = {k: holder_elsewhere(owned, archive, k) for k in run_keys}
    return {k: a for k, a in found.items() if a is not None}


def forget(con, run_key: str) -> None:
    con.execute(f"delete from raw.run_archives where run_key = {_lit(run_key)}")


def held(con) -> list[tuple[str | None, int]]:
    """(archive, runs) for each archive the landing holds; None: landed before archives were
    recorded. Empty when the landing predates the record and holds nothing."""
    if not _recorded(con):
        return []
    return con.execute(
        """select a.archive, count(*) from
               (select run_key from raw.runs union select run_key from raw.files) as k
           left join raw.run_archives as a using (run_key)
           group by all order by a.archive nulls last"""
    ).fetchall()


def _recorded(con) -> bool:
    """The landing records archives (a landing from before it, opened read-only, does not)."""
    return bool(
        con.execute(
            "select count(*) from information_schema.tables "
            "where table_schema = 'raw' and table_name = 'run_archives'"
        ).fetchone()[0]
    )
