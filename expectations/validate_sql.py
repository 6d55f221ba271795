"""The SQL form of each row-wise Great Expectations expectation the suites use.

validate counts each expectation's unexpected rows inside DuckDB, one aggregate per check,
and hands Great Expectations only the rows that fail, so its memory and time do not grow
with the marts (a whole `messages` DataFrame needed 11 GB at 10 M rows). Each predicate
here says what GX's pandas engine calls unexpected, null handling included: a column map
expectation skips null values (None, NaN, NaT), so a NaN in a DOUBLE column is null here too.
tests/test_validate_sql.py holds every predicate to GX's own verdicts on edge-case frames.
An expectation type without a SQL form is refused, never passed unchecked.
"""

from __future__ import annotations

import re
from typing import Any

FLOATS = ("DOUBLE", "FLOAT", "REAL")
KNOWN_OPTIONS = {
    *("column", "column_A", "column_B", "min_value", "max_value", "strict_min", "strict_max"),
    *("value_set", "or_equal", "ignore_row_if"),
}


class NoSqlForm(ValueError):
    """An expectation (or an option of one) this module cannot state in SQL."""


def quoted(col: str) -> str:
    return '"' + col.replace('"', '""') + '"'


def literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise NoSqlForm(f"no SQL literal for {value!r}")


def snake(expectation: str) -> str:
    """ExpectColumnValuesToBeBetween -> expect_column_values_to_be_between (GX's type name)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", expectation).lower()


def missing(col: str, types: dict[str, str]) -> str:
    """GX's null: NULL, and NaN where the column is a float (pandas holds both as NaN)."""
    q = quoted(col)
    return f"({q} is null or isnan({q}))" if types.get(col, "").upper() in FLOATS else f"({q} is null)"


def unexpected(expectation: str, kwargs: dict[str, Any], types: dict[str, str]) -> str:
    """A predicate true on exactly the rows GX counts as unexpected for this expectation."""
    extra = set(kwargs) - KNOWN_OPTIONS
    if extra:
        raise NoSqlForm(f"{expectation}: options {sorted(extra)} have no SQL form")
    if expectation == "ExpectColumnValuesToNotBeNull":
        return missing(kwargs["column"], types)
    if expectation == "ExpectColumnValuesToBeBetween":
        col = quoted(kwargs["column"])
        lo, hi = kwargs.get("min_value"), kwargs.get("max_value")
        if lo is None and hi is None:
            raise NoSqlForm(f"{expectation} needs min_value or max_value")
        outside = []
        if lo is not None:
            outside.append(f"{col} {'<=' if kwargs.get('strict_min') else '<'} {literal(lo)}")
        if hi is not None:
            outside.append(f"{col} {'>=' if kwargs.get('strict_max') else '>'} {literal(hi)}")
        return f"(not {missing(kwargs['column'], types)} and ({' or '.join(outside)}))"
    if expectation == "ExpectColumnValuesToBeInSet":
        values = ", ".join(literal(v) for v in kwargs["value_set"])
        return f"(not {missing(kwargs['column'], types)} and {quoted(kwargs['column'])} not in ({values}))"
    if expectation == "ExpectColumnPairValuesAToBeGreaterThanB":
        if kwargs.get("ignore_row_if") != "either_value_is_missing":
            raise NoSqlForm(f"{expectation}: only ignore_row_if='either_value_is_missing' has a SQL form")
        a, b = kwargs["column_A"], kwargs["column_B"]
        op = ">=" if kwargs.get("or_equal") else ">"
        return f"(not {missing(a, types)} and not {missing(b, types)} and not ({quoted(a)} {op} {quoted(b)}))"
    raise NoSqlForm(f"{expectation} has no SQL form")
