"""The Spark engine on a standalone cluster whose workers share no disk with the driver
(tests/spark_cluster.py: each worker in a mount namespace where the repo, its venv, the
interpreter's folder and the test's data folder are empty tmpfs).

With the packed environment (mtabench/engines/spark/pack.py, shipped by the session as
`spark.archives`) a mapInArrow task imports the compiled crate and the parser and parses
maillog lines sent as bytes; the counts equal awk's over the same lines. Without it, the
same job fails on the workers' own Python: the pack is what makes it run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from spark_cluster import REPO, SparkCluster

pytestmark = pytest.mark.xdist_group("spark")

MAILLOG = b"""Nov 21 22:04:34 mx1 postfix/smtpd[101]: connect from localhost[127.0.0.1]
Nov 21 22:04:35 mx1 -- MARK --
Nov 21 22:04:36 mx1 postfix/qmgr[12]: 5E12A9C6790: from=<a@b>, size=99, nrcpt=2 (queue active)
Nov 21 22:04:37 mx1 postfix/smtp[103]: 5E12A9C6790: to=<a@b>, relay=r[1.2.3.4]:25, delay=0.05, \
delays=0.02/0.03/0/0, dsn=2.0.0, status=sent (250 ok)
this is not a log line
Nov 21 22:04:39 mx1 postfix/qmgr[12]: 5E12A9C6790: removed
Nov 21 22:04:40 mx1 -- MARK --
Nov 21 22:04:41 mx1 kernel: [ 12.345] eth0: link up
Nov 21 22:04:42 mx1 postfix/smtpd[101]: disconnect from localhost[127.0.0.1] ehlo=1 quit=1 commands=2
<13>garbage without a stamp
Nov 21 22:04:43 mx1 dovecot: imap-login: Login: user=<u>, method=PLAIN, rip=127.0.0.1
"""
# what the workers' own Python lacks: the first of these a task imports
MISSING = r"ModuleNotFoundError: No module named '(pyarrow|pandas|ingest|mtabench\w*)"
CHUNKS = 4  # the lines go to the executors as this many rows (one partition each)

# The oracle: a syslog stamp is a parsed line unless it is a MARK (noise); the rest is quarantined.
AWK = (
    "/ -- MARK --$/ {n++; next} "
    "/^[A-Z][a-z][a-z] [ 0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9] / {r++; next} "
    "{q++} END {print r+0, n+0, q+0}"
)


@pytest.fixture(scope="module")
def maillog_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cluster-maillog")
    (d / "maillog").write_bytes(MAILLOG)
    return d


@pytest.fixture(scope="module")
def cluster(data_dir, maillog_dir):
    """Hidden from the workers besides the driver's paths: the data folder ($MTABENCH_DATA,
    where the session builds the pack) and the maillog's folder."""
    with SparkCluster(workers=2, hide=[data_dir, maillog_dir]) as c:
        print(f"cluster of 2 workers up in {c.start_seconds:.1f} s")
        yield c
        t0 = time.monotonic()
    print(f"cluster stopped in {time.monotonic() - t0:.1f} s")


def _stop_active_session() -> None:
    from pyspark.sql import SparkSession

    if (s := SparkSession.getActiveSession()) is not None:
        s.stop()


def _wait_executors(spark, n: int, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    tracker = spark.sparkContext._jsc.sc().statusTracker()
    while len(tracker.getExecutorInfos()) < n + 1:  # the driver counts as one
        assert time.monotonic() < deadline, f"fewer than {n} executors registered in {timeout:.0f} s"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def packed(cluster, tmp_path_factory):
    from mtabench.engines.spark.session import local_session

    _stop_active_session()
    t0 = time.monotonic()
    spark = local_session(warehouse=tmp_path_factory.mktemp("wh"), master=cluster.master_url)
    _wait_executors(spark, 2)
    print(f"session with the pack and 2 executors in {time.monotonic() - t0:.1f} s")
    yield spark
    t0 = time.monotonic()
    spark.stop()
    print(f"session stopped in {time.monotonic() - t0:.1f} s")


def _probe(paths: list[str]):
    """A mapInArrow function: per task, whether each path exists and which Python runs."""

    def probe(batches):
        import os
        import sys

        import pyarrow as pa

        for b in batches:
            for _ in b.column("id").to_pylist():
                seen = [os.path.exists(p) for p in paths]
                yield pa.RecordBatch.from_pylist(
                    [{"cwd": os.getcwd(), "python": sys.executable, "seen": seen}]
                )

    return probe


def test_workers_do_not_see_the_drivers_files(packed, maillog_dir):
    from mtabench.engines.spark.pack import default_path

    # the repo, the interpreter, the venv, the pack the driver built, the test's maillog
    paths = [str(REPO), sys.base_prefix, sys.prefix, str(default_path()), str(maillog_dir / "maillog")]
    assert all(os.path.exists(p) for p in paths)  # on the driver they are there
    rows = (
        packed.range(0, 8, numPartitions=8)
        .mapInArrow(_probe(paths), "cwd string, python string, seen array<boolean>")
        .collect()
    )
    executors = {r["cwd"] for r in rows}
    assert len(executors) == 2, executors  # both workers' executors ran tasks
    assert [r["seen"] for r in rows] == [[False] * len(paths)] * 8
    assert {r["python"].rsplit("/", 3)[-3] for r in rows} == {"mtabench_env"}, rows


def _parse_chunks():
    """A mapInArrow function: parse each row's bytes with the project's maillog parser (the
    compiled crate) and yield the counts, with the modules' files."""

    def parse(batches):
        import mtabench_maillog
        import pyarrow as pa

        import ingest.parsers.maillog as maillog
        from ingest.parsers.base import ParseContext

        for b in batches:
            for data in b.column("data").to_pylist():
                rows = noise = quarantined = 0
                for block in maillog.parse_blocks([data], 2026, ParseContext(year=2026)):
                    rows += block.rows
                    kinds = [k for _, k, _, _ in block.skipped()]
                    noise += sum(k == maillog.NOISE for k in kinds)
                    quarantined += sum(k != maillog.NOISE for k in kinds)
                yield pa.RecordBatch.from_pylist(
                    [
                        {
                            "rows": rows,
                            "noise": noise,
                            "quarantined": quarantined,
                            "crate": mtabench_maillog.__file__,
                            "parser": maillog.__file__,
                        }
                    ]
                )

    return parse


def _chunks() -> list[bytes]:
    lines = MAILLOG.splitlines(keepends=True)
    step = -(-len(lines) // CHUNKS)
    return [b"".join(lines[i : i + step]) for i in range(0, len(lines), step)]


PARSE_DDL = "rows long, noise long, quarantined long, crate string, parser string"


def _parse_on(spark):
    df = spark.createDataFrame([(c,) for c in _chunks()], "data binary").repartition(CHUNKS)
    return df.mapInArrow(_parse_chunks(), PARSE_DDL).collect()


def test_packed_executors_parse_maillog_bytes_as_awk_counts(packed, maillog_dir):
    want = subprocess.run(
        ["awk", AWK, str(maillog_dir / "maillog")], capture_output=True, text=True, check=True
    ).stdout.split()
    rows = _parse_on(packed)
    got = [sum(r[k] for r in rows) for k in ("rows", "noise", "quarantined")]
    assert got == [int(n) for n in want]
    assert sum(len(c.splitlines()) for c in _chunks()) == len(MAILLOG.splitlines())
    for r in rows:  # imported from the unpacked archive, not from any driver path
        assert "/mtabench_env/lib/python3.11/site-packages/" in r["crate"], r
        assert "/mtabench_env/lib/python3.11/site-packages/ingest/" in r["parser"], r


def test_without_the_pack_the_same_job_fails(packed, cluster):
    """The workers' own Python (Debian's python3, same minor version) lacks the project."""
    from pyspark.sql import SparkSession

    from mtabench.engines.spark.session import cluster_conf, session_conf

    packed.stop()
    before = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = "python3"
    try:
        builder = SparkSession.builder.master(cluster.master_url).appName("mtabench-unpacked")
        # the cluster's settings (shuffle blocks through the block managers) without the pack,
        # so the job reaches the Python task and fails there, not in a shuffle fetch
        conf = {**session_conf(), **cluster_conf(cluster.master_url), "spark.task.maxFailures": "1"}
        for k, v in conf.items():
            builder = builder.config(k, v)
        spark = builder.getOrCreate()
    finally:
        if before is None:
            os.environ.pop("PYSPARK_PYTHON")
        else:
            os.environ["PYSPARK_PYTHON"] = before
    try:
        with pytest.raises(Exception, match=MISSING):
            _parse_on(spark)
    finally:
        spark.stop()
