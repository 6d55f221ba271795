"""validate counts unexpected rows in DuckDB (expectations/validate_sql.py): each predicate must
call unexpected exactly the rows Great Expectations' pandas engine calls unexpected. Each
case is a small DuckDB table with the edge values (NULL, NaN, infinities, the bounds
themselves, NaT), read into pandas as validate reads it and judged by GX itself."""

from __future__ import annotations

import os

import duckdb
import pytest

from expectations import validate_sql
from expectations.suites import SUITES
from expectations.validate import UNIQUENESS

# (expectation, kwargs, a query giving column values; "v" and "w" are the checked columns)
INTS = "select * from (values (1), (0), (-1), (null), (5), (6), (2147483647)) as t(v)"
FLOATS = (
    "select v::double as v from (values ('0'), ('-0.5'), ('1'), ('1.0000001'), ('nan'), ('inf'), "
    "('-inf'), (null), ('0.5')) as t(v)"
)
STRINGS = "select * from (values ('ok'), ('failed'), (null), ('OK'), (''), ('partial ')) as t(v)"
STAMPS = "select v::timestamp as v from (values ('2026-01-01 00:00:00'), (null)) as t(v)"
PAIRS = (
    "select a::double as v, b::double as w from (values ('1', '1'), ('2', '1'), ('1', '2'), "
    "(null, '3'), ('3', null), ('nan', '1'), ('1', 'nan'), (null, null), ('inf', 'inf')) as t(a, b)"
)
INT_PAIRS = "select * from (values (1, 1), (2, 1), (1, 2), (null, 3), (3, null), (null, null)) as t(v, w)"
CASES = [
    ("ExpectColumnValuesToBeBetween", {"column": "v", "min_value": 0}, INTS),
    ("ExpectColumnValuesToBeBetween", {"column": "v", "min_value": 0, "max_value": 5}, INTS),
    ("ExpectColumnValuesToBeBetween", {"column": "v", "max_value": 0}, INTS),
    ("ExpectColumnValuesToBeBetween", {"column": "v", "min_value": 0, "max_value": 0}, INTS),
    (
        "ExpectColumnValuesToBeBetween",
        {"column": "v", "min_value": 0, "max_value": 5, "strict_min": True},
        INTS,
    ),
    (
        "ExpectColumnValuesToBeBetween",
        {"column": "v", "min_value": 0, "max_value": 5, "strict_max": True},
        INTS,
    ),
    ("ExpectColumnValuesToBeBetween", {"column": "v", "min_value": 0, "max_value": 1}, FLOATS),
    ("ExpectColumnValuesToBeBetween", {"column": "v", "min_value": -1e-6, "max_value": 1e-6}, FLOATS),
    ("ExpectColumnValuesToBeBetween", {"column": "v", "min_value": 0}, FLOATS),
    ("ExpectColumnValuesToNotBeNull", {"column": "v"}, INTS),
    ("ExpectColumnValuesToNotBeNull", {"column": "v"}, FLOATS),
    ("ExpectColumnValuesToNotBeNull", {"column": "v"}, STRINGS),
    ("ExpectColumnValuesToNotBeNull", {"column": "v"}, STAMPS),
    ("ExpectColumnValuesToBeInSet", {"column": "v", "value_set": ["ok", "failed", "partial"]}, STRINGS),
    ("ExpectColumnValuesToBeInSet", {"column": "v", "value_set": [0, 1, 5]}, INTS),
    *[
        (
            "ExpectColumnPairValuesAToBeGreaterThanB",
            {"column_A": "v", "column_B": "w", "or_equal": eq, "ignore_row_if": "either_value_is_missing"},
            rows,
        )
        for eq in (True, False)
        for rows in (PAIRS, INT_PAIRS)
    ],
]


@pytest.fixture(scope="module")
def gx_context():
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx

    ctx = gx.get_context(mode="ephemeral")
    return gx, ctx, ctx.data_sources.add_pandas("cases")


@pytest.mark.parametrize(("expectation", "kwargs", "rows"), CASES)
def test_sql_form_counts_what_gx_counts(gx_context, expectation, kwargs, rows):
    gx, ctx, source = gx_context
    con = duckdb.connect()
    types = {d[0]: str(d[1]) for d in con.execute(f"select * from ({rows}) limit 0").description}
    predicate = validate_sql.unexpected(expectation, kwargs, types)
    in_sql = con.execute(f"select count(*) filter (where {predicate}) from ({rows})").fetchone()[0]

    df = con.execute(rows).df()
    name = f"case{CASES.index((expectation, kwargs, rows))}"
    batch = source.add_dataframe_asset(name).add_batch_definition_whole_dataframe("whole")
    result = batch.get_batch(batch_parameters={"dataframe": df}).validate(
        getattr(gx.expectations, expectation)(**kwargs)
    )
    assert result.result.get("unexpected_count") is not None, result
    assert in_sql == result.result["unexpected_count"], (predicate, df)
    assert (in_sql == 0) == result.success


def test_every_case_has_rows_to_find():
    """A case where nothing is unexpected could not catch a predicate that finds nothing."""
    con = duckdb.connect()
    for expectation, kwargs, rows in CASES:
        types = {d[0]: str(d[1]) for d in con.execute(f"select * from ({rows}) limit 0").description}
        predicate = validate_sql.unexpected(expectation, kwargs, types)
        assert con.execute(f"select count(*) filter (where {predicate}) from ({rows})").fetchone()[0] > 0


def test_every_suite_expectation_has_a_sql_form_covered_here():
    """Each row-wise expectation of the suites translates, and its type and options are among
    the cases above (so GX has confirmed that form)."""
    covered = {(e, frozenset(k for k in kw if k != "column")) for e, kw, _ in CASES}
    for checks in SUITES.values():
        for check in checks:
            for expectation, kwargs in check.expectations:
                if expectation in UNIQUENESS:
                    continue
                validate_sql.unexpected(expectation, kwargs, {})
                options = frozenset(k for k in kwargs if k != "column")
                if expectation == "ExpectColumnPairValuesAToBeGreaterThanB":
                    options = frozenset(k for k in options if k not in ("column_A", "column_B")) | {
                        "column_A",
                        "column_B",
                    }
                assert (expectation, options) in covered, (check.name, expectation, kwargs)


def test_options_without_a_sql_form_are_refused():
    with pytest.raises(validate_sql.NoSqlForm):
        validate_sql.unexpected(
            "ExpectColumnValuesToBeBetween", {"column": "v", "min_value": 0, "mostly": 0.9}, {}
        )
    with pytest.raises(validate_sql.NoSqlForm):
        validate_sql.unexpected("ExpectColumnValuesToMatchRegex", {"column": "v", "regex": "x"}, {})
    with pytest.raises(validate_sql.NoSqlForm):
        validate_sql.unexpected(
            "ExpectColumnPairValuesAToBeGreaterThanB",
            {"column_A": "v", "column_B": "w", "ignore_row_if": "both_values_are_missing"},
            {},
        )
