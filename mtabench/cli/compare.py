"""`mtabench compare`: ministat-style comparison of runs' throughput or sample series."""

from __future__ import annotations

from pathlib import Path

import duckdb

from mtabench.stats import ministat


class UnknownSet(LookupError):
    pass


def load_set(con: duckdb.DuckDBPyConnection | None, name: str) -> list[float]:
    """A run's full-minute message counts, a sample series from the DB, or a file of numbers."""
    if con is not None:
        rows = con.execute(
            # as the comparisons mart: full minutes of the load generator's own rows; maillog-only
            # minutes (smtp-source runs, the drain) have no `messages`
            "select messages from main.minutes"
            " where run_id = ? and has_load_row and not is_partial order by minute_offset",
            [name],
        ).fetchall()
        if rows:
            return [float(r[0]) for r in rows]
        rows = con.execute(
            "select value from main.dtrace_samples where series = ? order by seq", [name]
        ).fetchall()
        if rows:
            return [float(r[0]) for r in rows]
    path = Path(name)
    if path.is_file():
        # ministat's reading: first field of each line, blank and '#' lines skipped
        return [
            float(line.split()[0])
            for line in path.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
    raise UnknownSet(f"{name!r} is neither a run with full minutes, a sample series, nor a file")


def compare_sets(db: Path, names: list[str], confidence: float, welch: bool, as_json: bool) -> str:
    con = duckdb.connect(str(db), read_only=True) if db.exists() else None
    try:
        sets = [load_set(con, n) for n in names]
    finally:
        if con is not None:
            con.close()
    if as_json:
        return ministat.to_json(sets, names, confidence, welch)
    return ministat.render(sets, names, confidence, welch)
