"""A hash of the dbt code a per-run model's rows depend on: every model, seed and macro, and
the project's vars (dbt_project.yml).

Every dbt process mtabench starts (the CLI, the Airflow producer) gets it as
MTABENCH_DBT_CODE_HASH, and macros/per_run.sql folds it into every run's fingerprint: a code
change rebuilds every run. dbt's graph has each model's and seed's checksum but not the
macros' or vars'; and reading it from the graph serialized every node each time a model
asked (~300 times a build: 5 s of CPU of adding one run at 236x the samples). The
macro walks the graph only when dbt runs without this variable. Standard library only: the
Airflow venv imports it too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

ENV = "MTABENCH_DBT_CODE_HASH"


def code_hash(dbt_project: Path) -> str:
    h = hashlib.sha256()
    files = [
        dbt_project / "dbt_project.yml",
        *sorted((dbt_project / "macros").rglob("*.sql")),
        *sorted((dbt_project / "models").rglob("*.sql")),
        *sorted((dbt_project / "seeds").rglob("*.csv")),
    ]
    for f in files:
        h.update(f.relative_to(dbt_project).as_posix().encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()[:16]
