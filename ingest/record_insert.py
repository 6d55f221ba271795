"""Parsed records (one dict per row) inserted into a landing table, through Arrow.

DuckDB registers an Arrow table at about half the cost of a pandas frame, and a run folder
lands ~10 of them: 126 new sample folders ingested in 18.9 s instead of 22.3 s. pandas stays
for the rare column Arrow cannot type as one: values of mixed kinds, an integer beyond 64
bits. (Neither saves pandas' import: pyarrow's `pa.array` and DuckDB's first bound parameter
each import it when it is installed.)
"""

from __future__ import annotations

import itertools


def arrow_frame(records: list[dict]):
    """The records as an Arrow table with a column for every key any record has (pyarrow's
    Table.from_pylist takes the first record's keys only), or None if a column's values do not
    share one Arrow type."""
    import pyarrow as pa

    keys = dict.fromkeys(itertools.chain.from_iterable(records))  # each record's keys, in C
    try:
        return pa.table({k: pa.array([rec.get(k) for rec in records]) for k in keys})
    except (pa.ArrowException, OverflowError, UnicodeError, TypeError):
        return None


def insert_records(con, table: str, records: list[dict], file_id: int | None = None) -> None:
    """Insert `records` into raw.`table` by column name; `file_id`, if given, on every row."""
    if not records:
        return
    _landing_records = arrow_frame(records)
    if _landing_records is None:
        import pandas as pd

        _landing_records = pd.DataFrame.from_records(records)
    extra = "" if file_id is None else f"{int(file_id)} as file_id, "
    # read by DuckDB's replacement scan (the local variable of that name), not con.register:
    # a registered frame stays referenced until the transaction ends, and a file's batches all
    # land in one transaction (memory grew with the file: 28 bytes per input byte)
    con.execute(f"insert into raw.{table} by name select {extra}* from _landing_records")
