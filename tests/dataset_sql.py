"""A Superset dataset's SQL as a chart runs it, without Superset: its Jinja rendered with the
dashboard's filter values (Superset's `filter_values(column)` and `where_in` filter), the
chart's filters applied around it as Superset wraps a virtual dataset."""

from __future__ import annotations

from pathlib import Path

import jinja2
import yaml

REPO = Path(__file__).resolve().parents[1]
DATASETS = REPO / "dashboards" / "datasets" / "mtabench"


def _quote(value) -> str:
    return "'" + str(value).replace("'", "''") + "'"


def where_in(values) -> str:
    return "(" + ", ".join(_quote(v) for v in values) + ")"


def dataset(name: str) -> dict:
    return yaml.safe_load((DATASETS / f"{name}.yaml").read_text())


def render(sql: str, filters: dict[str, list] | None = None) -> str:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined)
    env.filters["where_in"] = where_in
    filters = filters or {}
    return env.from_string(sql).render(filter_values=lambda column: list(filters.get(column, [])))


def query(con, name: str, filters: dict[str, list] | None = None, where: str | None = None):
    """Rows (as dicts) of dataset `name` with `filters` applied inside (Jinja) and outside."""
    sql = render(dataset(name)["sql"], filters)
    conditions = [f'"{col}" in {where_in(vals)}' for col, vals in (filters or {}).items() if vals]
    if where:
        conditions.append(f"({where})")
    outer = f"select * from ({sql}) as virtual_table" + (
        " where " + " and ".join(conditions) if conditions else ""
    )
    cur = con.execute(outer)
    names = [c[0] for c in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
