"""`--run X`: X is a run key (as `mtabench scan` lists it) or a run id (as the marts name it).

A run id selects the folder its run came from: the landing and the marts know the ids they
have seen (several runs in one folder: `seed000-s9-proxymap#2`, the folder's id and the run's
number); a folder not yet ingested answers to its default id (its folder name). An X matching
neither is an error.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from ingest import archive as arc


def _landed(db: Path) -> dict[str, set[str]]:
    """run id -> run keys, from the landing's raw.runs (empty without a landing)."""
    if not db.exists():
        return {}
    rows = []
    try:
        with duckdb.connect(str(db), read_only=True) as con:
            rows = con.execute("select run_id, run_key from raw.runs").fetchall()
            # the marts' ids, a folder's runs among them (`seed000-s9-proxymap#2`), once built
            rows += con.execute("select run_id, run_key from main.runs").fetchall()
    except duckdb.Error:
        pass
    out: dict[str, set[str]] = {}
    for run_id, run_key in rows:
        out.setdefault(run_id, set()).add(run_key)
    return out


def resolve(wanted: list[str], archive: Path, db: Path, work_dir: Path) -> tuple[set[str], list[str]]:
    """The run keys `wanted` selects, and the values that match no run of the archive."""
    landed = _landed(db)
    landed_keys = set().union(*landed.values()) if landed else set()
    if all(x in landed_keys for x in wanted):  # the common case needs no walk of the archive
        return set(wanted), []
    folders = [f for f in arc.discover(archive, arc.extraction_dir(work_dir)) if isinstance(f, arc.RunFolder)]
    keys = {f.run_key for f in folders}
    by_id: dict[str, set[str]] = {}
    for f in folders:
        by_id.setdefault(f.default_run_id, set()).add(f.run_key)
    for run_id, run_keys in landed.items():
        by_id.setdefault(run_id, set()).update(run_keys & keys)
    selected: set[str] = set()
    unknown: list[str] = []
    for x in wanted:
        base = x.rsplit("#", 1)[0]  # run N of a folder's runs: the folder's id
        if x in keys:
            selected.add(x)
        elif by_id.get(x) or by_id.get(base):
            selected |= by_id.get(x) or by_id[base]
        else:
            unknown.append(x)
    return selected, unknown
