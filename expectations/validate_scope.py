"""Which runs validate must check: only those not validated at their current state.

A per-run check (expectations/suites.py, `per_run`) judges each run's rows on their own, so a
run whose rows are what they were when they last passed needs no second look. Its state:

- landing suite: its raw.runs row and its raw.files rows (hashes, parser versions, line
  counts, status ...); a re-landed or edited file changes it.
- marts suite: the state its marts were built and passed every dbt test with
  (per_run_state.checked, written by dbt's on-run-end, dbt_project/macros/per_run_checks.sql,
  which folds in the landing and the dbt code). A run without one (not built yet, or its
  last build failed) is always checked.

Both also hold a hash of the suite's checks, so a changed check looks at every run again.
per_run_state.validated records what passed; validate writes it only when every check of
the suite passed, so a failing run is checked again next time. Cross-run checks (uniqueness
of run_id, comparisons) always read every row. `mtabench validate --all-runs` checks all.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from expectations.suites import Check

# the landing state of each run folder (cf. per_run_check_states in macros/per_run_checks.sql);
# {files}: raw.files without mtime_ns, the loader's note of when it hashed a file (a touched
# file is the same file; the state is what it was before the column)
RAW_STATES = """
    select
        runs.run_key,
        runs.run_id as folder_run_id,
        md5(concat_ws('|', cast(runs as varchar), coalesce(files.files, '-'))) as raw_state
    from raw.runs as runs
    left join (
        select run_key, string_agg(cast(files as varchar), ',' order by file_id) as files
        from {files} as files
        group by run_key
    ) as files
        on runs.run_key = files.run_key
"""


def raw_states(con) -> str:
    has_mtime = con.execute(
        "select count(*) from information_schema.columns "
        "where table_schema = 'raw' and table_name = 'files' and column_name = 'mtime_ns'"
    ).fetchone()[0]
    files = "(select * exclude (mtime_ns) from raw.files)" if has_mtime else "raw.files"
    return RAW_STATES.format(files=files)


def suite_hash(checks: list[Check]) -> str:
    return hashlib.sha256(repr(checks).encode()).hexdigest()[:16]


def _exists(con, schema: str, table: str) -> bool:
    q = "select count(*) from information_schema.tables where table_schema = ? and table_name = ?"
    return con.execute(q, [schema, table]).fetchone()[0] > 0


@dataclass
class Scope:
    """The pending runs of one suite: their folder run ids and their files."""

    folder_run_ids: list[str]
    file_ids: list[int]

    def predicate(self, key: str) -> str:
        if key == "file_id":
            # one list constant, as macros/per_run.sql file_id_in: the maillog landing's
            # partition folders are picked by it before any part is opened
            ids = ", ".join(map(str, self.file_ids))
            return f"list_contains([{ids}]::bigint[], file_id)" if self.file_ids else "false"
        if not self.folder_run_ids:
            return "false"
        if any("#" in r for r in self.folder_run_ids):  # its rows' prefix would not match it
            return "true"
        quoted = ", ".join("'" + r.replace("'", "''") + "'" for r in self.folder_run_ids)
        # a folder's runs are its run_id or run_id#1, #2 ... (int_postal__segment_runs)
        return f"split_part(run_id, '#', 1) in ({quoted})"


def _pending_sql(con, suite: str) -> str:
    if suite == "landing":
        state, join = "now.raw_state", ""
    else:
        state = "checked.state"
        join = "left join per_run_state.checked as checked on checked.run_key = now.run_key"
    return f"""
        select now.run_key, now.folder_run_id
        from ({raw_states(con)}) as now
        {join}
        where {state} is null or not exists (
            select 1 from per_run_state.validated as v
            where v.suite = $suite and v.suite_hash = $hash
                and v.run_key = now.run_key and v.state = {state}
        )
    """


# Beyond this many pending runs or files a check reads every row, as `validate --all-runs` does:
# scoped, a check carries them as literals in an IN list, and with every run of 236x the
# samples pending (7,000 run ids, 20,000 file ids) validate took 341 s against 46 s for every
# row (as after a change of the model code, which makes every run's rows new).
MAX_SCOPED = 2000


def pending(con, suite: str, checks: list[Check]) -> Scope | None:
    """The runs `suite` must check, or None: every run (no state on record to go by, or more
    pending runs or files than MAX_SCOPED)."""
    if not (_exists(con, "raw", "runs") and _exists(con, "per_run_state", "validated")):
        return None
    if suite != "landing" and not _exists(con, "per_run_state", "checked"):
        return None
    rows = con.execute(_pending_sql(con, suite), {"suite": suite, "hash": suite_hash(checks)}).fetchall()
    keys = [r[0] for r in rows]
    if len(keys) > MAX_SCOPED:
        return None
    files = con.execute("select file_id from raw.files where list_contains(?, run_key)", [keys]).fetchall()
    if len(files) > MAX_SCOPED:
        return None
    return Scope([r[1] for r in rows], [f[0] for f in files])


def without(con, scope: Scope | None, held: set[str]) -> Scope:
    """`scope` (None: every run) less the runs held back (folder run ids) and their files."""
    rows = con.execute("select run_key, run_id from raw.runs").fetchall()
    keys = [k for k, rid in rows if rid not in held]
    files = con.execute("select file_id from raw.files where list_contains(?, run_key)", [keys]).fetchall()
    kept_runs = [rid for _, rid in rows if rid not in held]
    kept_files = [f[0] for f in files]
    if scope is not None:
        kept_runs = [r for r in scope.folder_run_ids if r not in held]
        pending = set(scope.file_ids)
        kept_files = [f for f in kept_files if f in pending]
    return Scope(kept_runs, kept_files)


def record(con, suite: str, checks: list[Check]) -> None:
    """Every run's current state passed `suite` (its rows were checked now or before)."""
    if not _exists(con, "raw", "runs"):
        return
    if suite != "landing" and not _exists(con, "per_run_state", "checked"):
        return
    con.execute("create schema if not exists per_run_state")
    con.execute(
        "create table if not exists per_run_state.validated (suite varchar not null, "
        "run_key varchar not null, state varchar not null, suite_hash varchar not null)"
    )
    if suite == "landing":
        states = f"select run_key, raw_state as state from ({raw_states(con)})"
    else:
        states = "select run_key, state from per_run_state.checked"
    con.execute("begin")
    con.execute("delete from per_run_state.validated where suite = ?", [suite])
    con.execute(
        f"insert into per_run_state.validated select ?, run_key, state, ? from ({states})",
        [suite, suite_hash(checks)],
    )
    con.execute("commit")
