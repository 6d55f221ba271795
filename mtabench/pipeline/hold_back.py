"""Holding back a run whose own data fails validation, so the other runs still publish.

A failing per-run check (expectations/suites.py, `per_run`) names the runs of its failing
rows: those runs are held back and the suites run again without them, until they pass or a
failure names no run, or a check that spans runs fails (then nothing is published, as
before). A held run is published only as its `runs` row, with status `held` and the failure
as its status_reason; its rows leave every other published table (and the serving file's
record of them, so they come back whole once the run passes)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import duckdb

from expectations.validate import ValidationFailed

MAX_ROUNDS = 5  # each round holds back at least one more run; GX names up to 20 values a check


def validate_holding_back(validate: Callable[[set[str]], object]) -> dict[str, str]:
    """Run `validate(held)` until it passes; returns folder run id -> why it was held back.
    Re-raises a failure that is not one run's (a check across runs, or no run named)."""
    held: dict[str, str] = {}
    for _ in range(MAX_ROUNDS):
        try:
            validate(set(held))
            return held
        except ValidationFailed as exc:
            blamed: dict = {}
            for f in exc.failures:  # the first failure names the reason (landing before marts)
                for r in f.runs:
                    blamed.setdefault(r, f)
            if any(not f.per_run or not f.runs for f in exc.failures) or not set(blamed) - set(held):
                raise
            for run, failure in blamed.items():
                held.setdefault(run, "held back: " + str(failure).split("; runs: ")[0])
    validate(set(held))  # the last word: raises if still failing
    return held


def hold_back(serving: Path, held: dict[str, str], state: str) -> None:
    """In a serving file being written: the held runs' rows out of every `main` table but
    `runs`, where their status says why; `state` is the serving file's bookkeeping schema."""
    folders = sorted(held)
    with duckdb.connect(str(serving)) as con:
        tables = con.execute(
            "select table_name from information_schema.columns where table_schema = 'main' "
            "and column_name = 'run_id' and table_name <> 'runs'"
        ).fetchall()
        for (table,) in tables:
            con.execute(
                f"delete from main.\"{table}\" where list_contains(?, split_part(run_id, '#', 1))", [folders]
            )
        for folder, reason in held.items():
            where = "split_part(run_id, '#', 1) = ?"
            con.execute(
                f"update main.runs set status = 'held', status_reason = ? where {where}", [reason, folder]
            )
        # published without their rows: the next publish must write them whatever their fingerprint
        has_state = con.execute(
            "select count(*) from information_schema.tables where table_schema = ? and table_name = 'runs'",
            [state],
        ).fetchone()[0]
        if has_state:
            con.execute(
                f"delete from {state}.runs where list_contains(?, split_part(run_id, '#', 1))", [folders]
            )
        con.execute("checkpoint")
