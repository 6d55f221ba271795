"""The marts explain themselves: one name per meaning, rounded figures, no daily figure for a
run too short for one, and the dbt descriptions in the DuckDB files as table and column
comments (persist_docs; publish copies them into the serving file), read with the duckdb CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import SAMPLES

REPO = Path(__file__).resolve().parents[1]
MARTS = REPO / "dbt_project" / "models" / "marts"
RETIRED = (
    "sustainable_msgs_per_day",
    "sustainable_basis",
    "conservative_msgs_per_min",
    "conservative_msgs_per_day",
)
PER_DAY = (
    "peak_msgs_per_day",
    "sustained_msgs_per_day",
    "p10_msgs_per_day",
    "delivered_msgs_per_day",
    "capacity_msgs_per_day",
    "mean_ci_low_msgs_per_day",
    "mean_ci_high_msgs_per_day",
    "median_ci_low_msgs_per_day",
    "median_ci_high_msgs_per_day",
)


def _duckdb_cli() -> str:
    return shutil.which("duckdb") or str(Path(sys.executable).parent / "duckdb")


def _cli(db: Path, sql: str) -> list[dict]:
    out = subprocess.run(
        [_duckdb_cli(), "-readonly", "-json", str(db), sql], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout or "[]")


def _described() -> dict[tuple[str, str | None], str]:
    """(model, column or None) -> description, from the marts' yml."""
    out = {}
    for p in MARTS.glob("*.yml"):
        for model in yaml.safe_load(p.read_text()).get("models", []):
            if model.get("description"):
                out[(model["name"], None)] = model["description"]
            for col in model.get("columns", []):
                if col.get("description"):
                    out[(model["name"], col["name"])] = col["description"]
    return out


@pytest.mark.parametrize("which", ["build", "serving"])
def test_descriptions_are_comments_in_the_file(built_db, data_dir, which):
    db = built_db if which == "build" else data_dir / "serving" / "mtabench.duckdb"
    tables = {
        r["table_name"]: r["comment"]
        for r in _cli(db, "select table_name, comment from duckdb_tables() where schema_name = 'main'")
    }
    columns = {
        (r["table_name"], r["column_name"]): r["comment"]
        for r in _cli(
            db, "select table_name, column_name, comment from duckdb_columns() where schema_name = 'main'"
        )
    }
    described = _described()
    checked = 0
    for (model, column), text in described.items():
        if model not in tables:
            continue
        got = tables[model] if column is None else columns.get((model, column))
        assert got is not None and got.strip() == text.strip(), (which, model, column, got)
        checked += 1
    assert checked >= 100
    row = _cli(
        db,
        "select comment from duckdb_columns() "
        "where table_name = 'daily_capacity' and column_name = 'capacity_msgs_per_day'",
    )
    assert row[0]["comment"].startswith("Messages a day this configuration can carry")


def test_one_name_per_meaning(serving_con):
    columns = {
        r[0]
        for r in serving_con.execute(
            "select column_name from duckdb_columns() where schema_name = 'main'"
        ).fetchall()
    }
    assert not columns & set(RETIRED)
    # the p10 rate is one column under one name, the same number in runs and daily_capacity
    differ = serving_con.execute(
        "select count(*) from runs r join daily_capacity d using (run_id) "
        "where r.p10_msgs_per_min is distinct from d.p10_msgs_per_min"
    ).fetchone()[0]
    assert differ == 0
    # and no old name is left where the marts are read
    for folder in ("dashboards", "tests", "expectations", "mtabench", "bench", "dags", "dbt_project/models"):
        for p in (REPO / folder).rglob("*"):
            if (
                p.is_file()
                and p.suffix in (".py", ".sql", ".yml", ".yaml", ".md")
                and p.name != Path(__file__).name
            ):
                text = p.read_text(errors="replace")
                assert not [n for n in RETIRED if n in text], p
    readme = (REPO / "README.md").read_text()
    assert not [n for n in RETIRED if n in readme]


def test_figures_are_rounded(serving_con):
    per_day = " or ".join(f"{c} <> round({c})" for c in PER_DAY)
    assert serving_con.execute(f"select count(*) from daily_capacity where {per_day}").fetchone()[0] == 0
    rates = ("delivered_msgs_per_min", "injected_msgs_per_min", "queue_growth_per_min", "p10_msgs_per_min")
    cond = " or ".join(f"{c} <> round({c}, 2)" for c in rates)
    assert serving_con.execute(f"select count(*) from runs where {cond}").fetchone()[0] == 0
    for c in (
        "mean_msgs_per_min",
        "stddev_msgs_per_min",
        "mean_ci_low_msgs_per_min",
        "mean_ci_high_msgs_per_min",
    ):
        assert (
            serving_con.execute(f"select count(*) from daily_capacity where {c} <> round({c}, 2)").fetchone()[
                0
            ]
            == 0
        )
    # the error rate is a documented fraction: errors / (messages + errors), as the postal rows add up
    total_msgs, total_errs = 0, 0
    for line in (SAMPLES / "runs" / "d-errors-rcpt-rejects" / "postal.csv").read_text().splitlines()[1:]:
        f = line.split(",")
        if len(f) == 6 and f[1].isdigit():
            total_msgs, total_errs = total_msgs + int(f[1]), total_errs + int(f[3])
    rate = serving_con.execute(
        "select error_rate from runs where run_id = 'd-errors-rcpt-rejects'"
    ).fetchone()[0]
    assert rate == round(total_errs / (total_msgs + total_errs), 6)


def test_short_runs_have_no_daily_figures(serving_con):
    # tls-sasl's postal.csv holds one (partial) minute: too short for a day's extrapolation
    assert len((SAMPLES / "variants" / "tls-sasl" / "postal.csv").read_text().splitlines()) == 2
    short = serving_con.execute(
        "select run_id, " + ", ".join(PER_DAY) + " from daily_capacity where capacity_status = 'short'"
    ).fetchall()
    assert "tls-sasl" in {r[0] for r in short} and len(short) >= 10
    assert all(v is None for r in short for v in r[1:])
    ok = serving_con.execute(
        "select count(*) from daily_capacity where capacity_status = 'ok' and capacity_msgs_per_day is null"
    ).fetchone()[0]
    assert ok == 0
