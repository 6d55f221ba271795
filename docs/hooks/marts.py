"""mkdocs hook: the marts reference, generated from the dbt model files at build time.

docs/marts.md holds the marker `<!-- marts -->`; this hook replaces it with one section per
model in dbt_project/models/marts/*.yml: its description, its grain (the unique key its tests
hold it to), the per-run key, and a table of its columns with their descriptions and checks
(column_checks' not_null / non_negative / accepted_values / relationships, a column's own
unique test). The .yml files stay the one place a mart is described.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from mkdocs.exceptions import PluginError

MARKER = "<!-- marts -->"
MARTS = Path(__file__).resolve().parents[2] / "dbt_project" / "models" / "marts"
# reading order on the page: the run, its minutes and events, the answers, then the detail tables
ORDER = [
    "runs",
    "minutes",
    "events",
    "error_bursts",
    "daily_capacity",
    "saturation_events",
    "comparisons",
    "comparison_levels",
    "messages",
    "system_minutes",
    "system_device_minutes",
    "dtrace_samples",
    "dtrace_histograms",
]


def load_models(folder: Path = MARTS) -> list[dict]:
    models = []
    for path in sorted(folder.glob("*.yml")):
        for model in yaml.safe_load(path.read_text()).get("models", []):
            models.append({**model, "_file": path.name})
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(models, key=lambda m: (rank.get(m["name"], len(ORDER)), m["name"]))


def _column_checks(model: dict) -> dict:
    """The arguments of the model's column_checks test (empty when it has none)."""
    for test in model.get("data_tests") or []:
        if isinstance(test, dict) and "column_checks" in test:
            return test["column_checks"].get("arguments") or {}
    return {}


def _has_test(column: dict, name: str) -> bool:
    return any(t == name or (isinstance(t, dict) and name in t) for t in column.get("data_tests") or [])


def grain(model: dict) -> list[list[str]]:
    """Every unique key the tests hold the model to: single columns and combinations."""
    keys = [[c["name"]] for c in model.get("columns") or [] if _has_test(c, "unique")]
    return keys + [list(k) for k in _column_checks(model).get("unique") or []]


def checks_by_column(model: dict) -> dict[str, list[str]]:
    args = _column_checks(model)
    out: dict[str, list[str]] = {}
    for col in args.get("not_null") or []:
        out.setdefault(col, []).append("not null")
    for col in args.get("non_negative") or []:
        out.setdefault(col, []).append("≥ 0")
    for col, values in (args.get("accepted_values") or {}).items():
        out.setdefault(col, []).append("one of " + ", ".join(f"`{v}`" for v in values))
    for rel in args.get("relationships") or []:
        to = rel["to"].removeprefix("ref('").removesuffix("')")
        out.setdefault(rel["column"], []).append(f"in `{to}.{rel['field']}`")
    for c in model.get("columns") or []:
        if _has_test(c, "unique"):
            out.setdefault(c["name"], []).append("unique")
    return out


def _cell(text: str | None) -> str:
    return " ".join((text or "").split()).replace("|", "\\|")


def render_model(model: dict) -> str:
    name = model["name"]
    keys = grain(model)
    meta = (model.get("config") or {}).get("meta") or {}
    lines = [f"## {name}", "", _cell(model.get("description")) or "(no description)", ""]
    grain_text = " and ".join("(" + ", ".join(f"`{c}`" for c in k) + ")" for k in keys)
    lines.append(f"- **Grain:** one row per {grain_text or 'value (no unique key)'}")
    if meta.get("per_run_key"):
        lines.append(f"- **Built and checked per run** by `{meta['per_run_key']}`")
    lines.append(f"- **Defined in** `dbt_project/models/marts/{model['_file']}`")
    lines += ["", "| column | description | checks |", "| --- | --- | --- |"]
    checks = checks_by_column(model)
    documented = [c["name"] for c in model.get("columns") or []]
    described = {c["name"]: c.get("description") for c in model.get("columns") or []}
    extra = (set(checks) | {c for k in keys for c in k}) - set(documented)
    for col in documented + sorted(extra):
        lines.append(f"| `{col}` | {_cell(described.get(col))} | {', '.join(checks.get(col, []))} |")
    return "\n".join(lines) + "\n"


def render(models: list[dict]) -> str:
    summary = ["| mart | one row per | built per run |", "| --- | --- | --- |"]
    for m in models:
        keys = grain(m)
        key = ", ".join(f"`{c}`" for c in keys[0]) if keys else "value"
        per_run = "yes" if ((m.get("config") or {}).get("meta") or {}).get("per_run_key") else ""
        summary.append(f"| [`{m['name']}`](#{m['name']}) | {key} | {per_run} |")
    return "\n".join(summary) + "\n\n" + "\n".join(render_model(m) for m in models)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if page.file.src_uri != "marts.md":
        return markdown
    if MARKER not in markdown:
        raise PluginError(f"docs/marts.md lost its {MARKER} marker: the marts reference would be empty")
    models = load_models()
    if not models:
        raise PluginError(f"no model .yml files under {MARTS}")
    return markdown.replace(MARKER, render(models))
