"""Every mart and intermediate table of two builds compared row for row (EXCEPT ALL both ways).

Build the samples with two commits (e.g. `git worktree add /tmp/base <commit>`, then `make run`
in each, or `MTABENCH_DATA=<dir> uv run --frozen mtabench run samples`) and compare their
build files:

    uv run --frozen python bench/marts_parity.py BASE/mtabench.duckdb NEW/mtabench.duckdb

Prints, per table, its rows and the rows only in each build; a table whose columns differ is
named as such. Exit status 1 when any table differs.
"""

from __future__ import annotations

import argparse
import sys

import duckdb

SKIP_SCHEMAS = ("raw", "per_run_state", "reference", "information_schema", "pg_catalog")
VOLATILE = {"built_at", "validated_at"}  # when, not what


def compare(base: str, new: str) -> int:
    differ = 0
    with duckdb.connect() as con:
        con.execute(f"attach '{base}' as a (read_only)")
        con.execute(f"attach '{new}' as b (read_only)")
        tables = con.execute(
            "select schema_name, table_name from duckdb_tables() where database_name = 'a' "
            f"and schema_name not in {SKIP_SCHEMAS} order by 1, 2"
        ).fetchall()
        for schema, table in tables:

            def cols(db: str, schema=schema, table=table) -> list[str]:
                return [
                    r[0]
                    for r in con.execute(
                        "select column_name from duckdb_columns() where database_name = ? "
                        "and schema_name = ? and table_name = ? order by column_index",
                        [db, schema, table],
                    ).fetchall()
                ]

            a_cols, b_cols = cols("a"), cols("b")
            name = f"{schema}.{table}"
            if a_cols != b_cols:
                print(
                    f"COLUMNS {name}: only in base {sorted(set(a_cols) - set(b_cols))}, "
                    f"only in new {sorted(set(b_cols) - set(a_cols))}"
                )
                differ += 1
                continue
            sel = ", ".join(f'"{c}"' for c in a_cols if c not in VOLATILE)
            a_rows, b_rows = (f"select {sel} from {db}.{schema}.{table}" for db in ("a", "b"))
            only_a = con.execute(f"select count(*) from ({a_rows} except all {b_rows})").fetchone()[0]
            only_b = con.execute(f"select count(*) from ({b_rows} except all {a_rows})").fetchone()[0]
            n = con.execute(f"select count(*) from b.{schema}.{table}").fetchone()[0]
            same = only_a == only_b == 0
            differ += not same
            print(
                f"{'same' if same else 'DIFF'} {name}: {n} rows, only in base {only_a}, only in new {only_b}"
            )
    return 1 if differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("new")
    args = ap.parse_args()
    return compare(args.base, args.new)


if __name__ == "__main__":
    sys.exit(main())
