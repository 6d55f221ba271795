"""What a failed `column_checks` dbt test found, column by column.

A model's not_null / non_negative / accepted_values checks are one dbt test
(dbt_project/tests/generic/column_checks.sql), so dbt's own failure line names the model,
not the column. Its query returns one row per failing check; after a failed build this
runs the test's compiled query read-only and lists those rows.
"""

from __future__ import annotations

import re
from pathlib import Path

_COMPILED = re.compile(r"compiled code at (\S*column_checks_\S+\.sql)")


def compiled_column_checks(lines: list[str], project: Path) -> list[Path]:
    """The compiled queries of the failed column_checks tests a dbt output names (a relative
    path is the project's)."""
    paths = (project / m.group(1) for line in lines if (m := _COMPILED.search(line)))
    return list(dict.fromkeys(paths))


def explain(db: Path, compiled: list[Path]) -> list[str]:
    """One line per failing check: `column_checks_runs: status accepted_values 1 row(s)`."""
    if not compiled or not db.exists():
        return []
    import duckdb

    out: list[str] = []
    with duckdb.connect(str(db), read_only=True) as con:
        for path in compiled:
            try:
                rows = con.execute(path.read_text()).fetchall()
            except (OSError, duckdb.Error) as exc:  # the summary still names the test
                out.append(f"{path.stem}: could not list the failing checks ({exc})")
                continue
            out += [f"{path.stem}: {column} {check} {n} row(s)" for check, column, n in rows]
    return out
