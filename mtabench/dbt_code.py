"""A hash of the dbt code a per-run model's rows depend on beyond its own file.

dbt's graph gives each model's checksum (macros/per_run.sql folds them into every run's
fingerprint) but not the macros' or the project's vars: a changed macro or var would leave
the incremental models' rows as the old code built them. Every dbt process mtabench starts
(the CLI, the Airflow producer) gets this hash as MTABENCH_DBT_CODE_HASH; a change rebuilds
every run. Standard library only: the Airflow venv imports it too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

ENV = "MTABENCH_DBT_CODE_HASH"


def code_hash(dbt_project: Path) -> str:
    h = hashlib.sha256()
    files = [dbt_project / "dbt_project.yml", *sorted((dbt_project / "macros").rglob("*.sql"))]
    for f in files:
        h.update(f.relative_to(dbt_project).as_posix().encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()[:16]
