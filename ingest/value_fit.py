"""Does every parsed value fit its landing column? A line whose value does not is quarantined.

One check for every parser, applied to a Ledger before it is written: a number outside its
column's range (INTEGER, BIGINT), a number DOUBLE cannot hold (too large, inf, nan), or text
with stray control bytes (a NUL in an otherwise text file) would either abort the insert
(and with it the file and the run) or land garbage. Instead the whole line leaves the
parsed rows and noise and is quarantined with a reason naming the column and the value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from functools import cache

from ingest.ledger import QUARANTINED, Ledger

INT_RANGE = {
    "TINYINT": (-(2**7), 2**7 - 1),
    "SMALLINT": (-(2**15), 2**15 - 1),
    "INTEGER": (-(2**31), 2**31 - 1),
    "BIGINT": (-(2**63), 2**63 - 1),
    "HUGEINT": (-(2**127), 2**127 - 1),
    "UTINYINT": (0, 2**8 - 1),
    "USMALLINT": (0, 2**16 - 1),
    "UINTEGER": (0, 2**32 - 1),
    "UBIGINT": (0, 2**64 - 1),
}
FLOAT_TYPES = {"DOUBLE", "FLOAT", "REAL"}
# C0 control characters that never occur in the text outputs we read (tab, CR, form feed,
# backspace and ESC do: terminals and CRLF replies).
CONTROL = {chr(c) for c in range(32)} - set("\t\n\r\f\b\x1b") | {"\x7f"}
HAS_CONTROL = re.compile("[" + "".join(re.escape(c) for c in sorted(CONTROL)) + "]")


@cache
def _scratch():
    """One in-memory DuckDB for every DDL: a new one per DDL cost ~60 ms, 10 % of adding one
    run to a 5,000-folder archive."""
    import duckdb

    return duckdb.connect()


@cache
def column_types(ddl: str) -> dict[str, str]:
    """Column name -> DuckDB type name, for a column DDL as the parsers declare it."""
    con = _scratch().cursor()  # a cursor per call: callers may be on several threads
    try:
        con.execute(f"create temp table t ({ddl})")
        rows = con.execute(
            "select column_name, data_type from information_schema.columns"
            " where table_catalog = 'temp' and table_name = 't'"
        ).fetchall()
        return dict(rows)
    finally:
        con.execute("drop table if exists t")
        con.close()


def misfit(value: object, col_type: str) -> str | None:
    """Why `value` cannot land in a column of `col_type`, or None if it can."""
    if value is None or isinstance(value, bool):
        return None
    if col_type in INT_RANGE and isinstance(value, int | float):
        lo, hi = INT_RANGE[col_type]
        if isinstance(value, float) and not math.isfinite(value):
            return "is not a finite number"
        if not lo <= value <= hi:
            return f"is outside {col_type} range"
        return None
    if col_type in FLOAT_TYPES and isinstance(value, int | float):
        try:
            f = float(value)
        except OverflowError:
            return f"is too large for {col_type}"
        return None if math.isfinite(f) else "is not a finite number"
    if isinstance(value, str) and (bad := HAS_CONTROL.search(value)):
        return f"contains control byte 0x{ord(bad.group()):02x}"
    return None


def _fits(value: object, int_range: tuple[int, int] | None) -> bool:
    """The common values `misfit` passes, decided without it (a row of a large file has tens of
    values): an int in its integer column's range, a finite float (in range for an integer
    column), text without a control byte, a value of another kind (None, bool, a time).
    False means: ask `misfit`."""
    t = type(value)
    if t is int:
        return int_range is not None and int_range[0] <= value <= int_range[1]
    if t is str:
        return HAS_CONTROL.search(value) is None
    if t is float:
        return math.isfinite(value) and (int_range is None or int_range[0] <= value <= int_range[1])
    return value is None or t is bool or not isinstance(value, int | float | str)


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:40]}...({len(text)} chars)"


def fit_ledger(ledger: Ledger, tables: Mapping[str, str]) -> int:
    """Quarantine every line with a value that does not fit; returns how many lines moved."""
    reasons: dict[int, tuple[str, str]] = {}  # line_no -> (reason, text)
    for table, ddl in tables.items():
        types = column_types(ddl)
        ranges = {c: INT_RANGE.get(t) for c, t in types.items()}
        for rec in ledger.rows.get(table, []):
            line_no = rec.get("line_no")
            if line_no is None or line_no in reasons:
                continue
            for col, value in rec.items():
                if _fits(value, ranges.get(col)):
                    continue
                why = misfit(value, types.get(col, ""))
                if why:
                    shown = " ".join(
                        f"{k}={_show(v)}" for k, v in rec.items() if k not in ("line_no", "item_no")
                    )
                    reasons[line_no] = (f"value {_show(value)} for {table}.{col} {why}", shown)
                    break
    # Rows about the file as a whole (segments, smtp-source run summaries) mark no line: a value
    # there that does not fit was taken from a line quarantined here (its own row holds it), so
    # the summary keeps NULL instead of failing the file's insert.
    for table, ddl in tables.items():
        types = column_types(ddl)
        for rec in ledger.meta.get(table, []):
            for col, value in rec.items():
                if misfit(value, types.get(col, "")):
                    rec[col] = None
    for item in ledger.noise:
        if item["line_no"] not in reasons and (why := misfit(item["text"], "VARCHAR")):
            reasons[item["line_no"]] = (f"line {why}", item["text"])
    if not reasons:
        return 0
    for table, recs in ledger.rows.items():
        ledger.rows[table] = [r for r in recs if r.get("line_no") not in reasons]
    texts = {q["line_no"]: q["text"] for q in ledger.quarantine}
    texts.update({n["line_no"]: n["text"] for n in ledger.noise if n["line_no"] in reasons})
    ledger.noise = [n for n in ledger.noise if n["line_no"] not in reasons]
    for line_no, (reason, shown) in sorted(reasons.items()):
        ledger.items[line_no] = []
        ledger.quarantine.append(
            {"line_no": line_no, "item_no": 0, "reason": reason, "text": texts.get(line_no, shown)}
        )
        ledger.items[line_no].append({"quarantine": reason})
        ledger.status[line_no] = QUARANTINED
    return len(reasons)
