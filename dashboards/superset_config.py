"""Superset configuration for the mtabench dashboards (loaded via SUPERSET_CONFIG_PATH).

Everything lives under the state directory: $MTABENCH_SUPERSET_HOME, else
$MTABENCH_DATA/superset, else <repo>/data/superset (data/ is gitignored):
the SQLite metadata DB, the generated secret key and the admin password.
Loopback only, no outside requests from the browser (CSP), SQL Lab read-only.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.pool import Pool

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("MTABENCH_DATA", REPO / "data")).resolve()
STATE_DIR = Path(os.environ.get("MTABENCH_SUPERSET_HOME", DATA_DIR / "superset")).resolve()
STATE_DIR.mkdir(parents=True, exist_ok=True)


def _secret_key() -> str:
    key = os.environ.get("MTABENCH_SUPERSET_SECRET_KEY")
    if key:
        return key
    path = STATE_DIR / "secret_key"
    if not path.exists():
        # Written once, then reused: the key encrypts stored database credentials.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(48))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
SQLALCHEMY_DATABASE_URI = f"sqlite:///{STATE_DIR / 'superset.db'}?check_same_thread=false"

# Single host, no Redis: in-process caches and rate limits.
CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": 300}
# a run dropped into the inbox is served within a minute: chart data is cached for 10 s only
DATA_CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": 10}
FILTER_STATE_CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": 86400}
EXPLORE_FORM_DATA_CACHE_CONFIG = {"CACHE_TYPE": "SimpleCache", "CACHE_DEFAULT_TIMEOUT": 86400}
RATELIMIT_STORAGE_URI = "memory://"

# The front end requests a tracking pixel from an outside host; SCARF_ANALYTICS=False
# alone does not stop it, the CSP below does (img-src/connect-src: self, blob:, data:).
SCARF_ANALYTICS = False
TALISMAN_ENABLED = True
TALISMAN_CONFIG = {
    "content_security_policy": {
        "base-uri": ["'self'"],
        "default-src": ["'self'"],
        "img-src": ["'self'", "blob:", "data:"],
        "connect-src": ["'self'", "blob:", "data:"],
        "worker-src": ["'self'", "blob:"],
        "object-src": "'none'",
        "style-src": ["'self'", "'unsafe-inline'"],
        "font-src": ["'self'", "data:"],
        "script-src": ["'self'", "'strict-dynamic'"],
    },
    "content_security_policy_nonce_in": ["script-src"],
    "force_https": False,
    "session_cookie_secure": False,
}
CONTENT_SECURITY_POLICY_WARNING = False

FEATURE_FLAGS = {
    "DASHBOARD_NATIVE_FILTERS": True,
    "DASHBOARD_CROSS_FILTERS": True,
    # render every chart at once (screenshots and render checks see the whole dashboard)
    "DASHBOARD_VIRTUALIZATION": False,
    # dataset SQL reads the dashboard's filters (filter_values): "Which setting won" compares
    # the two picked runs with compare_runs() instead of a table of every pair; the rendered
    # SQL still passes the serving guard below
    "ENABLE_TEMPLATE_PROCESSING": True,
    "ALERT_REPORTS": False,
    "THUMBNAILS": False,
    "TAGGING_SYSTEM": False,
    "EMBEDDED_SUPERSET": False,
}

# Bubbles carry their run's label. Superset 6.1's bubble chart (bubble_v2) has no label control
# and draws each bubble as an ECharts series of its own; the theme's per-chart-type ECharts
# overrides are merged into the chart's options, an object given for `series` into every series.
# So each bubble shows its entity (data dimension 3: the chart's `entity` column, the run) beside
# it; a label that would overlap one already drawn is left off, and the tooltip still names
# every bubble.
_RUN_LABEL = {"show": True, "position": "right", "distance": 4, "formatter": "{@[3]}", "fontSize": 11}
ECHARTS_OVERRIDES_BY_CHART_TYPE = {
    "bubble_v2": {
        "series": {"label": _RUN_LABEL, "labelLayout": {"hideOverlap": True}},
        "grid": {"right": 200},  # room for the rightmost bubble's label (~32 characters)
    },
}


def _with_echarts_overrides(theme: dict | None) -> dict | None:
    # a key of the theme itself, beside "token" (the front end's Theme.setConfig reads it there)
    if theme is None:
        return None
    return {**theme, "echartsOptionsOverridesByChartType": ECHARTS_OVERRIDES_BY_CHART_TYPE}


# Superset's own default and dark themes (superset.config, which loads this file), plus the above
from superset import config as _superset_defaults  # noqa: E402

THEME_DEFAULT = _with_echarts_overrides(_superset_defaults.THEME_DEFAULT)
THEME_DARK = _with_echarts_overrides(_superset_defaults.THEME_DARK)

# SQL Lab: read-only by construction (the database is imported with allow_dml: false,
# opened read-only by DuckDB, and the guards below); no uploads.
SQLLAB_CTAS_NO_LIMIT = False
# a chart asks for every row it can get at 6,000+ runs (tests/test_dashboard_limits.py)
SQL_MAX_ROW = 1_000_000
PREVENT_UNSAFE_DB_CONNECTIONS = True

# DuckDB can read and write files by itself (read_text, glob, COPY ... TO, ATTACH), and with
# external access off it still writes the open database file and its .wal: from SQL Lab,
# `COPY (select 1) TO '<serving file>'` replaced the published file with CSV. Two layers, each
# enough alone (dashboards/serving_guard.py says how; tests/test_serving_guard.py proves it):
# every DuckDB engine Superset creates is read-only with its file system switched off and its
# configuration locked, whatever the database's `extra` or URI says (the mutator below and the
# pool hook under it, so this holds if someone edits the database in the UI); and every query
# Superset sends to it must be a SELECT over the serving tables (SQL_QUERY_MUTATOR).
sys.path.insert(0, str(Path(__file__).resolve().parent))
import serving_guard  # noqa: E402


def DB_CONNECTION_MUTATOR(uri, params, username, security_manager, source):  # noqa: N802
    if uri.get_backend_name() != "duckdb":
        return uri, params
    uri = uri.difference_update_query([k for k in uri.query if k not in ("read_only",)])
    return uri, {**params, "connect_args": serving_guard.connect_args(params.get("connect_args"))}


def _lock_duckdb(dbapi_connection, connection_record):
    # every new DBAPI connection of any engine: DuckDB's (duckdb_engine wraps them) get locked
    if type(dbapi_connection).__module__.split(".")[0] in ("duckdb_engine", "duckdb", "_duckdb"):
        serving_guard.lock(dbapi_connection)


event.listen(Pool, "connect", _lock_duckdb)


def SQL_QUERY_MUTATOR(sql, database=None, **kwargs):  # noqa: N802
    # SQL Lab, charts and dataset previews alike; a refusal becomes the query's error message
    if database is not None and database.backend == "duckdb":
        serving_guard.check(sql)
    return sql


# Superset's own check, before the query reaches the mutator (names as sqlglot reports them).
DISALLOWED_SQL_FUNCTIONS = {
    "duckdb": {
        "current_setting", "getenv", "glob", "query", "query_table", "sniff_csv", "read_text",
        "read_blob", "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "read_json",
        "read_json_auto", "read_ndjson", "duckdb_settings", "duckdb_databases", "duckdb_extensions",
        "duckdb_secrets", "json_execute_serialized_sql",
    }
}  # fmt: skip
DISALLOWED_SQL_TABLES = {
    "duckdb": {
        "duckdb_settings",
        "duckdb_databases",
        "duckdb_extensions",
        "pragma_database_list",
        "pg_settings",
    },
}


# No outside calls at start-up or in the UI.
MAPBOX_API_KEY = ""
SLACK_API_TOKEN = None
