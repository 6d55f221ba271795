"""`mtabench run --engine spark` on a cluster whose hosts share nothing with the driver but
the network: a standalone master and 2 workers in their own mount namespaces (the repo, the
venv, the interpreter's folder, the data folders and the archive are empty tmpfs there;
tests/spark_cluster.py), storage only through a real S3-compatible server on loopback
(tests/s3_server.py). A worker is killed with SIGKILL while dbt builds; Spark recovers, and
the marts equal those of the DuckDB engine's run of the same archive.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest
from spark_cluster import SparkCluster
from test_spark_parity import PARITY_MARTS, _columns, _rows, _same

from tests.conftest import SAMPLES

pytestmark = pytest.mark.xdist_group("spark")

MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]
# a few runs, with and without maillogs, so the build stays a few minutes on two 1-core workers
RUNS = ["a-baseline-t5", "c-throttled-queue-backlog", "d-errors-rcpt-rejects"]
DRIVER_HOST = "127.0.0.2"
DBT_STARTED = "maillog parsed on Spark"  # spark-build.log: the parse is done, dbt starts next
RUN_TIMEOUT = 900


def _env(data: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MTABENCH_", "AWS_"))}
    return {**env, "MTABENCH_DATA": str(data), **extra}


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cluster-archive") / "archive"
    for i, run in enumerate(RUNS):
        # one run a folder deeper: its run key holds a "/", which a partition folder's name
        # holds as "%2F" in the bucket
        shutil.copytree(SAMPLES / "runs" / run, root / ("lab" if i == 0 else "") / run)
    return root


@pytest.fixture(scope="module")
def duckdb_build(archive, tmp_path_factory) -> Path:
    data = tmp_path_factory.mktemp("duck-data")
    p = subprocess.run(
        [*MTABENCH, "run", str(archive), "--no-publish"], env=_env(data), capture_output=True, text=True
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return data / "mtabench.duckdb"


def test_cluster_run_over_s3_survives_a_killed_worker(archive, duckdb_build, s3_server, tmp_path_factory):
    data = tmp_path_factory.mktemp("spark-data")
    bucket = s3_server.new_bucket()
    hidden = [data, archive.parent, duckdb_build.parent]
    with SparkCluster(workers=2, hide=hidden, env=s3_server.env) as cluster:
        env = _env(
            data,
            MTABENCH_SPARK_MASTER=cluster.master_url,
            MTABENCH_SPARK_STORAGE=f"s3a://{bucket}/mtabench",
            # the driver's address as a user on another host than the workers sets it (a
            # loopback address other than the default, so the test stays on loopback)
            MTABENCH_SPARK_DRIVER_HOST=DRIVER_HOST,
            **s3_server.env,
        )
        log = data / "run.log"
        t0 = time.monotonic()
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [*MTABENCH, "run", str(archive), "--engine", "spark", "--no-publish"],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
            build_log = data / "logs" / "spark-build.log"
            killed_at = None
            while proc.poll() is None and time.monotonic() - t0 < RUN_TIMEOUT:
                if killed_at is None and build_log.exists() and DBT_STARTED in build_log.read_text():
                    time.sleep(5)  # dbt's session is up and its first models are running
                    cluster.kill_worker(1)
                    killed_at = time.monotonic() - t0
                time.sleep(0.5)
            if proc.poll() is None:
                proc.kill()
            rc = proc.wait()
        took = time.monotonic() - t0
        print(f"spark run on the cluster: {took:.0f} s, worker 1 killed at {killed_at} s, exit {rc}")
        assert rc == 0, log.read_text()[-5000:]
        assert killed_at is not None and killed_at < took, "the worker was not killed mid-run"
        # both applications (the parse, dbt's session) had their executors call the driver there
        logs = cluster.worker_logs()
        launched = re.findall(r'"--driver-url" "spark://CoarseGrainedScheduler@([^:"]+):\d+"', logs)
        apps = set(re.findall(r'"--app-id" "([^"]+)"', logs))
        assert len(apps) >= 2 and launched and set(launched) == {DRIVER_HOST}, (apps, set(launched))
        # the master lists the two applications by name: the parse and dbt's session
        names = set(re.findall(r"Registering app (\S+)", (cluster.root / "master.log").read_text()))
        assert {"mtabench", "mtabench-dbt"} <= names, names

    # everything the cluster wrote is in the bucket, nothing of it on the driver's disk
    stored = s3_server.objects(f"{bucket}/mtabench")
    assert any(k.startswith("warehouse/main.db/runs/") and k.endswith(".parquet") for k in stored)
    assert any(k.startswith("warehouse/main.db/runs/_delta_log/") and k.endswith(".json") for k in stored)
    assert any(k.startswith("parsed/maillog/run_key=") for k in stored)
    assert any(k.startswith("landing/maillog_lines/") and k.endswith("/input") for k in stored)
    assert not (data / "spark" / "warehouse").exists() and not (data / "spark" / "parsed").exists()

    spark_db = data / "spark" / "mtabench.duckdb"
    con = duckdb.connect()
    con.execute(f"attach '{duckdb_build}' as d (read_only)")
    con.execute(f"attach '{spark_db}' as s (read_only)")
    assert con.execute("select count(*) from d.main.runs").fetchone()[0] == len(RUNS)
    for mart in PARITY_MARTS:
        cols = _columns(con, "d", mart)
        assert _columns(con, "s", mart) == cols, mart
        want, got = _rows(con, "d", mart, cols), _rows(con, "s", mart, cols)
        assert len(got) == len(want), mart
        bad = [(w, g) for w, g in zip(want, got, strict=True) if not all(map(_same, w, g))]
        assert not bad, f"{mart}: {len(bad)} rows differ, first {bad[0]}"
    n = con.execute("select count(*) from d.raw.maillog").fetchone()[0]
    assert n > 0
    assert con.execute("select count(*) from s.raw.maillog").fetchone()[0] == n
