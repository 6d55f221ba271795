"""Two ingests sharing a data folder (other databases, the same $MTABENCH_DATA) at once:
each unpacks bundles into, and removes, a folder of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile

from conftest import SAMPLES

MTABENCH = [sys.executable, "-m", "mtabench.cli.main"]


def test_concurrent_ingests_of_the_same_bundles_with_other_databases(tmp_path):
    archive = tmp_path / "archive"
    archive.mkdir()
    runs = sorted(p for p in (SAMPLES / "runs").iterdir() if p.is_dir())
    for run in runs:
        with tarfile.open(archive / f"{run.name}.tar.gz", "w:gz") as tar:
            tar.add(run, arcname=run.name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTABENCH")}
    env["MTABENCH_DATA"] = str(tmp_path / "data")
    for attempt in range(3):  # the overlap is a race: try it a few times
        procs = [
            subprocess.Popen(
                [*MTABENCH, "ingest", str(archive), "--db", str(tmp_path / f"db{attempt}-{i}.duckdb")],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        for p in procs:
            out, err = p.communicate(timeout=600)
            assert p.returncode == 0 and "Traceback" not in err, err[-3000:]
            assert f"{len(runs)} runs" in out + err, (out + err)[-2000:]
    # each removed what it unpacked
    left = tmp_path / "data/work/extracted"
    assert not left.exists() or not any(left.iterdir())
