"""Great Expectations: the suites (suites.py) and their runner against a DuckDB file
(validate.py), with the runs each must check (validate_scope.py) and each expectation as SQL
(validate_sql.py)."""
