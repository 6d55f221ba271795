"""Where things live: overridable by flags, then environment, then defaults beside the repo."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DBT_PROJECT = REPO / "dbt_project"


class BadSetting(ValueError):
    """A setting from the environment that cannot be used as given (exit 2, nothing done)."""


@dataclass(frozen=True)
class Paths:
    db: Path
    data_dir: Path
    serving: Path | None = None  # --serving-db; else $MTABENCH_SERVING_DB; else beside the DB

    @property
    def work_dir(self) -> Path:
        return self.data_dir / "work"

    @property
    def log_dir(self) -> Path:
        """Full logs of each stage (the terminal gets one line per stage)."""
        return self.data_dir / "logs"

    @property
    def gx_dir(self) -> Path:
        return self.data_dir / "gx"

    @property
    def landing_dir(self) -> Path:
        """The Parquet landing (one folder per format, partitioned by run): always a local
        folder, written beside the ledger. A URI here is refused, not taken as a folder name;
        shared storage for a cluster is MTABENCH_SPARK_STORAGE."""
        value = os.environ.get("MTABENCH_LANDING")
        if value and "://" in value:
            raise BadSetting(
                f"MTABENCH_LANDING={value}: the Parquet landing is a local folder; "
                "for a cluster set MTABENCH_SPARK_STORAGE to a shared URI (s3a://bucket/prefix)"
            )
        return Path(value) if value else self.data_dir / "landing"

    @property
    def spark_dir(self) -> Path:
        return self.data_dir / "spark"

    @property
    def spark_storage(self) -> str:
        """Where a Spark build keeps what executors and dbt read and write (a copy of the
        landing, the parsed maillog, the warehouse): the local spark folder, or a URI every
        host reaches (s3a://bucket/prefix)."""
        return os.environ.get("MTABENCH_SPARK_STORAGE") or str(self.spark_dir)

    @property
    def serving_db(self) -> Path:
        """Where a build publishes: `<db dir>/serving/<db name>` unless told otherwise.

        Derived from the DB so that a scratch build (`--db /tmp/x.duckdb`) never replaces the
        file the dashboards read; the default DB gives the default `data/serving/mtabench.duckdb`.
        """
        if self.serving is not None:
            return self.serving
        if env := os.environ.get("MTABENCH_SERVING_DB"):
            return Path(env).resolve()
        return self.db.parent / "serving" / self.db.name

    @classmethod
    def resolve(cls, db: str | None = None, serving: str | None = None) -> Paths:
        data_dir = Path(os.environ.get("MTABENCH_DATA", REPO / "data")).resolve()
        db_path = Path(db or os.environ.get("MTABENCH_DB", data_dir / "mtabench.duckdb")).resolve()
        return cls(db=db_path, data_dir=data_dir, serving=Path(serving).resolve() if serving else None)
