"""`airflow dags test` only: its in-process Execution API serves the one API version it speaks.

`airflow dags test` runs each task through an Execution API built inside its own process
(`InProcessExecutionAPI`), and at its first request Cadwyn generates the routes of every API
version Airflow has ever had (ten in 3.3: ~230 FastAPI routes, ~3 s on a quiet core, 6-9 s on
2 busy ones), in each `dags test` process, for a client in the same venv that only ever sends
the latest version (`airflow.sdk` API_VERSION). Here that app is built with the latest version
alone: the head schemas, which are the latest version's (Cadwyn's head is that version before
any migration), and its ~25 routes, less the routes kept only for older clients (marked
`only_exists_in_older_versions`, which the latest version does not have).

Nothing else changes: the scheduler's tasks use the api-server, which is never patched (this
only runs in an `airflow dags test` process, and only when the client's version is Airflow's
latest); if Airflow's internals move, the patch is skipped and the full app is built as before.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

log = logging.getLogger(__name__)


def _is_dags_test(argv: list[str]) -> bool:
    return argv[1:3] == ["dags", "test"]


def serve_latest_api_version_only(argv: list[str] | None = None) -> bool:
    """In an `airflow dags test` process, build its in-process Execution API for the client's
    version alone. Returns whether the patch is in place."""
    if not _is_dags_test(sys.argv if argv is None else argv):
        return False
    try:
        from copy import copy

        from airflow.api_fastapi.execution_api import app as app_module
        from airflow.api_fastapi.execution_api import routes, versions
        from airflow.sdk.api.datamodels._generated import API_VERSION
        from cadwyn import HeadVersion, Version, VersionBundle
        from cadwyn.route_generation import _DELETED_ROUTE_TAG
    except ImportError:  # Airflow's layout moved: build the full app
        return False
    full = versions.bundle
    if getattr(app_module.create_task_execution_api_app, "_mtabench_latest_only", False):
        return True
    if full.versions[0].value != API_VERSION or full.head_version.changes:
        return False  # the client speaks an older version, or head differs from the latest
    latest = VersionBundle(HeadVersion(), Version(API_VERSION))
    all_routes = routes.execution_api_router
    latest_routes = copy(all_routes)
    latest_routes.routes = [r for r in all_routes.routes if _DELETED_ROUTE_TAG not in getattr(r, "tags", ())]
    create = app_module.create_task_execution_api_app

    def create_latest_only(*args: Any, **kwargs: Any) -> Any:
        # both read by create_task_execution_api_app when it is called
        versions.bundle, routes.execution_api_router = latest, latest_routes
        try:
            return create(*args, **kwargs)
        finally:
            versions.bundle, routes.execution_api_router = full, all_routes

    create_latest_only._mtabench_latest_only = True  # type: ignore[attr-defined]
    app_module.create_task_execution_api_app = create_latest_only
    log.debug("in-process Execution API: version %s only", API_VERSION)
    return True
