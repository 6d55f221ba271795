"""record_insert: parsed records as rows of a landing table, through Arrow (or pandas when a
column's values do not share one Arrow type)."""

from __future__ import annotations

import datetime as dt

import duckdb
import pytest

from ingest.record_insert import arrow_frame, insert_records


@pytest.fixture
def con():
    c = duckdb.connect()
    c.execute("create schema raw")
    c.execute(
        "create table raw.t (file_id bigint not null, line_no integer, n bigint, x double,"
        " s varchar, ts timestamp, d date)"
    )
    yield c
    c.close()


def rows(con) -> list[tuple]:
    return con.execute("select * from raw.t order by line_no").fetchall()


def test_a_key_only_later_records_have_is_landed(con):
    # pyarrow's Table.from_pylist would take the first record's keys and drop `s` silently
    records = [{"line_no": 1, "n": 5}, {"line_no": 2, "n": None, "s": "late"}]
    insert_records(con, "t", records, 7)
    assert rows(con) == [(7, 1, 5, None, None, None, None), (7, 2, None, None, "late", None, None)]


def test_integers_with_nulls_stay_integers_and_types_land(con):
    at = dt.datetime(2024, 5, 1, 12, 30, 15, 250000)
    records = [
        {"line_no": 1, "n": 2**62, "x": 1.5, "s": "a", "ts": at, "d": at.date()},
        {"line_no": 2, "n": None, "x": 2, "s": None, "ts": None, "d": None},
    ]
    insert_records(con, "t", records, 1)
    assert rows(con) == [(1, 1, 2**62, 1.5, "a", at, at.date()), (1, 2, None, 2.0, None, None, None)]


def test_a_column_of_mixed_kinds_falls_back_to_pandas_and_lands(con):
    records = [{"line_no": 1, "s": "text"}, {"line_no": 2, "s": 42}]
    assert arrow_frame(records) is None  # Arrow has no one type for str and int
    insert_records(con, "t", records, 3)
    assert [r[4] for r in rows(con)] == ["text", "42"]


def test_rows_without_a_file_id_argument_keep_their_own(con):
    insert_records(con, "t", [{"file_id": 9, "line_no": 1, "s": "x"}])
    assert rows(con) == [(9, 1, None, None, "x", None, None)]


def test_no_records_insert_nothing(con):
    insert_records(con, "t", [], 1)
    assert rows(con) == []
