"""The documentation site builds with `mkdocs build --strict` (a broken link or anchor, a page
missing from the nav, a hook error fails it), and its generated pages hold what their sources
hold: every mart of dbt_project/models/marts/*.yml with its documented columns, and
bench/RESULTS.md as the results page."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    p = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
        env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return out


def _marts() -> dict[str, list[str]]:
    """Each model of the marts' .yml files and its documented columns, read here on their own."""
    found = {}
    for path in sorted((REPO / "dbt_project" / "models" / "marts").glob("*.yml")):
        for model in yaml.safe_load(path.read_text())["models"]:
            found[model["name"]] = [c["name"] for c in model.get("columns") or []]
    assert {"runs", "minutes", "events", "daily_capacity", "comparisons"} <= found.keys()
    return found


def test_every_page_in_the_nav_is_built(site):
    pages = sorted(p.relative_to(REPO / "docs").with_suffix("") for p in (REPO / "docs").glob("*.md"))
    assert pages
    for page in pages:
        built = site / "index.html" if page.name == "index" else site / page / "index.html"
        assert built.exists(), page


def test_marts_page_has_every_mart_and_its_documented_columns(site):
    page = html.unescape((site / "marts" / "index.html").read_text())
    for name, columns in _marts().items():
        assert f'id="{name}"' in page, name
        section = page.split(f'id="{name}"', 1)[1].split("<h2", 1)[0]
        assert "Grain:" in section, name
        for col in columns:
            assert f"<code>{col}</code>" in section, (name, col)


def test_results_page_is_bench_results(site):
    page = html.unescape((site / "results" / "index.html").read_text())
    headings = [
        line[3:]
        for line in (REPO / "bench" / "RESULTS.md").read_text().splitlines()
        if line.startswith("## ")
    ]
    assert headings
    for heading in headings:
        assert heading.replace("`", "") in page.replace("<code>", "").replace("</code>", ""), heading


def test_dashboard_screenshots_are_on_the_site(site):
    for png in (REPO / "docs" / "screenshots").glob("*.png"):
        assert (site / "screenshots" / png.name).read_bytes() == png.read_bytes()


def test_run_toml_reference_parses_with_no_field_left_out():
    """The manifest shown in docs/archive.md is one ingest/manifest.py reads whole."""
    from ingest.manifest import parse_manifest

    (block,) = re.findall(r"^```toml\n(.*?)^```", (REPO / "docs" / "archive.md").read_text(), re.S | re.M)
    manifest = parse_manifest(block)
    assert manifest.problems == [], manifest.problems
    assert manifest.group and manifest.baseline and manifest.previous_settings and manifest.tool
