"""Dashboards as code: the committed YAML under dashboards/ <-> Superset import/export bundles.

Runs in Superset's venv (envs/superset); called by scripts/superset.sh.

    assets.py bundle --src dashboards --out x.zip --uri duckdb:////abs/serving.duckdb
    assets.py import-models --zip x.zip [--user admin]
    assets.py normalize --zip export.zip --dest dashboards

The committed YAML is Superset's export layout (metadata.yaml, databases/, datasets/<db>/,
charts/, dashboards/), keyed by uuid, normalized so that an edit reviews as a clean diff:
no timestamps, no database ids (charts refer to datasets by uuid; dashboard positions and
metadata use stable pseudo chart ids derived from the chart uuid, which the importer maps
to the real ids), stable file names from titles, query contexts as indented sorted JSON,
and the database URI replaced by a placeholder that `bundle` fills in.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

import yaml

URI_PLACEHOLDER = "duckdb:///MTABENCH_SERVING_DB"
READ_ONLY_EXTRA = {"engine_params": {"connect_args": {"read_only": True}}}
SUBDIRS = ("databases", "datasets", "charts", "dashboards")
BUNDLE_ROOT = "mtabench_dashboards"

# form_data keys the dashboard adds at render time or that carry database ids.
VOLATILE_FORM_DATA = {
    "datasource",
    "slice_id",
    "dashboardId",
    "dashboard_id",
    "extra_form_data",
    "extra_filters",
    "label_colors",
    "shared_label_colors",
    "map_label_colors",
    "color_scheme_domain",
    "own_color_scheme",
    "dashboard_color_scheme",
    "url_params",
    "force",
    "native_filters",
    "chart_id",
}


# ---------------------------------------------------------------- YAML style


class _Dumper(yaml.SafeDumper):
    pass


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str_representer)


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=4096)


def slug(text: str) -> str:
    s = re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_").lower()
    if len(s) > 60:
        s = s[:60].rsplit("_", 1)[0]
    return s or "unnamed"


def pseudo_id(uuid: str) -> int:
    """A stable stand-in for a chart's database id (the importer remaps it)."""
    return int(uuid.replace("-", "")[:7], 16)


# ---------------------------------------------------------------- bundle (import side)


def _json_text(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, dict) else value


def bundle(src: Path, out: Path, uri: str) -> None:
    files: dict[str, str] = {}
    meta = src / "metadata.yaml"
    files["metadata.yaml"] = meta.read_text()
    for sub in SUBDIRS:
        for path in sorted((src / sub).rglob("*.yaml")):
            rel = path.relative_to(src).as_posix()
            config = yaml.safe_load(path.read_text())
            if sub == "databases":
                config["sqlalchemy_uri"] = uri
                extra = config.get("extra") or {}
                extra.setdefault("engine_params", {}).setdefault("connect_args", {})["read_only"] = True
                config["extra"] = extra
                config["allow_dml"] = False
            if sub == "charts":
                config["query_context"] = _json_text(config.get("query_context"))
            files[rel] = dump_yaml(config)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for rel, text in files.items():
            z.writestr(f"{BUNDLE_ROOT}/{rel}", text)
    print(f"assets: bundled {len(files)} files into {out}")


def import_models(zip_path: Path, user: str) -> None:
    """Databases (with their URI), datasets and charts with overwrite.

    `superset import-dashboards` imports related databases, datasets and charts without
    overwrite (an edited chart would not update); this runs first so the YAML wins.
    """
    from superset.app import create_app

    app = create_app()
    with app.app_context():
        from superset import security_manager
        from superset.commands.chart.importers.v1 import ImportChartsCommand
        from superset.commands.database.importers.v1 import ImportDatabasesCommand
        from superset.commands.dataset.importers.v1 import ImportDatasetsCommand
        from superset.commands.importers.v1.utils import get_contents_from_bundle
        from superset.utils.core import override_user

        with zipfile.ZipFile(zip_path) as z:
            contents = get_contents_from_bundle(z)
        account = security_manager.find_user(username=user)
        if account is None:
            sys.exit(f"assets: no Superset user {user!r} (run: scripts/superset.sh setup)")
        with override_user(account):
            for command in (ImportDatabasesCommand, ImportDatasetsCommand, ImportChartsCommand):
                subset = {
                    k: v for k, v in contents.items() if k.startswith(("databases/", "datasets/", "charts/"))
                }
                # without a "type", each command accepts the dashboard bundle's files
                subset["metadata.yaml"] = dump_yaml({"version": "1.0.0"})
                command(subset, overwrite=True).run()
    print("assets: imported databases, datasets and charts (overwrite)")


# ---------------------------------------------------------------- normalize (export side)


def _normalize_query_context(text: str | None, ds_uuid: str | None) -> str | None:
    if not text:
        return None
    qc = json.loads(text)
    qc.pop("datasource", None)
    qc.pop("force", None)
    form_data = qc.get("form_data") or {}
    for key in VOLATILE_FORM_DATA:
        form_data.pop(key, None)
    for query in qc.get("queries", []):
        query.pop("datasource", None)
        query.pop("url_params", None)
    return json.dumps(qc, indent=2, sort_keys=True) + "\n"


def _normalize_chart(config: dict[str, Any]) -> dict[str, Any]:
    params = config.get("params") or {}
    for key in VOLATILE_FORM_DATA:
        params.pop(key, None)
    config["params"] = params
    config["query_context"] = _normalize_query_context(
        config.get("query_context"), config.get("dataset_uuid")
    )
    return config


def _normalize_dashboard(config: dict[str, Any]) -> dict[str, Any]:
    position = config.get("position") or {}
    id_map: dict[int, int] = {}
    for node in position.values():
        if isinstance(node, dict) and node.get("type") == "CHART" and "uuid" in node.get("meta", {}):
            new = pseudo_id(node["meta"]["uuid"])
            old = node["meta"].get("chartId")
            if old is not None:
                id_map[int(old)] = new
            node["meta"]["chartId"] = new
    if len(set(id_map.values())) != len(id_map):
        sys.exit("assets: two charts share a pseudo id; change one chart's uuid")

    def remap(x: Any) -> Any:
        return id_map.get(int(x), x) if isinstance(x, int | str) and str(x).isdigit() else x

    meta = config.get("metadata") or {}
    if "timed_refresh_immune_slices" in meta:
        meta["timed_refresh_immune_slices"] = sorted(remap(i) for i in meta["timed_refresh_immune_slices"])
    if "expanded_slices" in meta:
        meta["expanded_slices"] = {str(remap(k)): v for k, v in sorted(meta["expanded_slices"].items())}
    if "filter_scopes" in meta:
        meta["filter_scopes"] = {str(remap(k)): v for k, v in meta["filter_scopes"].items()}
    for key in ("shared_label_colors", "map_label_colors", "color_scheme_domain", "positions"):
        meta.pop(key, None)
    chart_conf = meta.get("chart_configuration") or {}
    new_conf = {}
    for k, v in chart_conf.items():
        nk = remap(int(k)) if str(k).isdigit() else k
        if isinstance(v, dict):
            v["id"] = nk
            scope = v.get("crossFilters", {}).get("scope")
            if isinstance(scope, dict) and scope.get("excluded"):
                scope["excluded"] = sorted(remap(i) for i in scope["excluded"])
        new_conf[str(nk)] = v
    if "chart_configuration" in meta:
        meta["chart_configuration"] = dict(sorted(new_conf.items()))
    gcc = meta.get("global_chart_configuration") or {}
    if isinstance(gcc.get("scope"), dict) and gcc["scope"].get("excluded"):
        gcc["scope"]["excluded"] = sorted(remap(i) for i in gcc["scope"]["excluded"])
    for nf in meta.get("native_filter_configuration", []):
        for target in nf.get("targets", []):
            target.pop("datasetId", None)
        scope = nf.get("scope") or {}
        if scope.get("excluded"):
            scope["excluded"] = sorted(remap(i) for i in scope["excluded"])
    config["metadata"] = meta
    return config


def normalize(zip_path: Path, dest: Path) -> list[str]:
    with zipfile.ZipFile(zip_path) as z:
        raw = {}
        for name in z.namelist():
            if not name.endswith(".yaml"):
                continue
            rel = name.split("/", 1)[1] if "/" in name else name
            raw[rel] = yaml.safe_load(z.read(name))

    out: dict[str, str] = {"metadata.yaml": dump_yaml({"version": "1.0.0", "type": "Dashboard"})}
    db_slug: dict[str, str] = {}
    for rel, config in raw.items():
        if rel.startswith("databases/"):
            name = slug(config["database_name"])
            db_slug[config["uuid"]] = name
            config["sqlalchemy_uri"] = URI_PLACEHOLDER
            config.pop("password", None)
            out[f"databases/{name}.yaml"] = dump_yaml(config)
    for rel, config in raw.items():
        if rel.startswith("datasets/"):
            db = db_slug.get(config["database_uuid"], "unknown")
            out[f"datasets/{db}/{slug(config['table_name'])}.yaml"] = dump_yaml(config)
        elif rel.startswith("charts/"):
            path = f"charts/{slug(config['slice_name'])}.yaml"
            if path in out:
                path = f"charts/{slug(config['slice_name'])}_{config['uuid'][:8]}.yaml"
            out[path] = dump_yaml(_normalize_chart(config))
        elif rel.startswith("dashboards/"):
            out[f"dashboards/{slug(config['dashboard_title'])}.yaml"] = dump_yaml(
                _normalize_dashboard(config)
            )

    written = []
    for sub in SUBDIRS:
        for old in (dest / sub).rglob("*.yaml") if (dest / sub).exists() else []:
            if old.relative_to(dest).as_posix() not in out:
                old.unlink()
    for rel, text in sorted(out.items()):
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            written.append(rel)
    print(f"assets: {len(out)} files in {dest} ({len(written)} changed)")
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("bundle")
    b.add_argument("--src", type=Path, required=True)
    b.add_argument("--out", type=Path, required=True)
    b.add_argument("--uri", required=True)
    i = sub.add_parser("import-models")
    i.add_argument("--zip", type=Path, required=True)
    i.add_argument("--user", default="admin")
    n = sub.add_parser("normalize")
    n.add_argument("--zip", type=Path, required=True)
    n.add_argument("--dest", type=Path, required=True)
    args = p.parse_args(argv)
    if args.cmd == "bundle":
        bundle(args.src, args.out, args.uri)
    elif args.cmd == "import-models":
        import_models(args.zip, args.user)
    else:
        normalize(args.zip, args.dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
