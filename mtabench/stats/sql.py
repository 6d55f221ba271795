"""ministat's arithmetic as SQL for Python: the macros of dbt_project/macros/ministat.sql, the
ones the dbt models call, rendered with plain Jinja (they use no dbt context)."""

from __future__ import annotations

from functools import cache
from typing import Any

import jinja2

from mtabench.paths import DBT_PROJECT

MACROS = DBT_PROJECT / "macros" / "ministat.sql"


@cache
def macros() -> Any:
    """The file's macros as callables: `macros().ministat_variance("value")` is SQL text."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    return env.from_string(MACROS.read_text()).module


def render(template: str, **context: Any) -> str:
    """A template whose `{{ m.ministat_... }}` calls expand to the macros' SQL."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    return env.from_string(template).render(m=macros(), **context)
