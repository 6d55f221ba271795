"""The dbt project documents and tests every model, and only staging reads the landing.

Read from the manifest.json of the session's real `dbt build` (the `built_db` fixture), so
a model added without a description, without a test of its grain, or reading `source()`
from outside `models/staging/` fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

# Models with no key to be unique on: one row per value of a data set, nothing else.
KEYLESS = {"int_sample_sets": "one row per value of a data set (run minutes, sample series)"}
# column_checks with a `unique` combination (dbt_project/tests/generic/column_checks.sql)
GRAIN_TESTS = {"unique", "unique_combination", "column_checks.unique"}
# views whose grain is their input's, tested there: the view joins only unique keys, so a
# second test would re-read every line for nothing (39 s of a full build at 236x)
GRAIN_TESTED_UPSTREAM = {"int_maillog__lines": "stg_maillog__lines"}
# views whose grain is unique by construction (one group per key, ingest/maillog_messages.py)
# and tested where their rows are read: `messages` tests (run_id, queue_id, message_instance)
# on every landed row it takes (a file is one run's); a test here re-read 12.8 M landed
# messages at each full build at 236x (7 s)
GRAIN_TESTED_DOWNSTREAM = {"stg_maillog__messages": "messages"}


@pytest.fixture(scope="module")
def manifest(built_db, data_dir) -> dict:
    # mtabench.pipeline.dbt points DBT_TARGET_PATH at <data dir>/dbt_target
    path = Path(data_dir) / "dbt_target" / "manifest.json"
    assert path.exists(), f"dbt wrote no manifest at {path}"
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def models(manifest) -> dict[str, dict]:
    found = {n["name"]: n for n in manifest["nodes"].values() if n["resource_type"] == "model"}
    # the project's three layers are all there (a wrong manifest would make the rest vacuous)
    assert {"stg_raw__files", "int_file_runs", "runs", "messages"} <= found.keys()
    return found


@pytest.fixture(scope="module")
def tests_by_model(manifest) -> dict[str, list[str]]:
    """Generic test names attached to each model (unique, not_null, relationships, ...)."""
    by_model: dict[str, list[str]] = {}
    for node in manifest["nodes"].values():
        if node["resource_type"] != "test" or not node.get("attached_node"):
            continue
        meta = node.get("test_metadata") or {}
        name = meta.get("name", "singular")
        model = manifest["nodes"][node["attached_node"]]["name"]
        by_model.setdefault(model, []).append(name)
        if name == "column_checks":  # its kwargs name the checks it holds
            by_model[model] += [f"column_checks.{k}" for k, v in meta.get("kwargs", {}).items() if v]
    return by_model


def test_every_model_has_a_description(models):
    missing = sorted(name for name, node in models.items() if not node["description"].strip())
    assert missing == []


def test_every_model_has_tests(models, tests_by_model):
    missing = sorted(name for name in models if not tests_by_model.get(name))
    assert missing == []


def test_every_model_tests_its_grain(models, tests_by_model):
    """A unique key (one column or a combination) on every model that has one."""
    assert KEYLESS.keys() <= models.keys(), "a KEYLESS model was renamed or removed"
    for view, upstream in GRAIN_TESTED_UPSTREAM.items():
        assert models[view]["config"]["materialized"] == "view", view
        assert any(d.endswith(f".{upstream}") for d in models[view]["depends_on"]["nodes"]), (view, upstream)
        assert GRAIN_TESTS & set(tests_by_model.get(upstream, [])), upstream
    for view, downstream in GRAIN_TESTED_DOWNSTREAM.items():
        assert models[view]["config"]["materialized"] == "view", view
        assert any(d.endswith(f".{view}") for d in models[downstream]["depends_on"]["nodes"]), (
            view,
            downstream,
        )
        assert GRAIN_TESTS & set(tests_by_model.get(downstream, [])), downstream
    exempt = KEYLESS.keys() | GRAIN_TESTED_UPSTREAM.keys() | GRAIN_TESTED_DOWNSTREAM.keys()
    without = sorted(
        name for name in models if name not in exempt and not GRAIN_TESTS & set(tests_by_model.get(name, []))
    )
    assert without == []


def test_only_staging_reads_sources(models):
    outside = {
        name: sorted(d for d in node["depends_on"]["nodes"] if d.startswith("source."))
        for name, node in models.items()
        if not node["original_file_path"].startswith("models/staging/")
    }
    assert {name: srcs for name, srcs in outside.items() if srcs} == {}


def test_every_source_table_has_a_staging_model(manifest, models):
    """Each landing table the models use is read by exactly one staging model."""
    readers: dict[str, list[str]] = {}
    for name, node in models.items():
        for dep in node["depends_on"]["nodes"]:
            if dep.startswith("source."):
                readers.setdefault(dep, []).append(name)
    assert readers, "no model reads a source: the manifest is not the project's"
    assert {src: names for src, names in readers.items() if len(names) != 1} == {}
    assert all(name.startswith("stg_") for names in readers.values() for name in names)
