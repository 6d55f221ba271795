"""One real S3-compatible server for the test session: s3s-fs on 127.0.0.1, built and started by
scripts/s3_server.sh (install is skipped when the binary is cached; a failed install fails the
test with the script's output). Fresh data folder and generated credentials in a temp dir;
stopped at the end of the session (`running_server`: the same for a server of its own, as
bench/engine_bench.py --cluster starts). conftest.py registers the `s3_server` fixture; `s3_env`
points this process's S3 settings (what Store reads) at it.

`S3Server.fs()` and `S3Server.backing_file()` are the tests' independent view of the bucket:
pyarrow's S3FileSystem built here, and the files s3s-fs keeps under its data folder.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow.fs as pafs
import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "s3_server.sh"
S3_VARS = ("MTABENCH_S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")


def _script(cmd: str, env: dict, timeout: float) -> str:
    p = subprocess.run(
        ["bash", str(SCRIPT), cmd], env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout
    )
    assert p.returncode == 0, (
        f"scripts/s3_server.sh {cmd} exited {p.returncode}\n{p.stdout[-4000:]}\n{p.stderr[-4000:]}"
    )
    return p.stdout


class S3Server:
    def __init__(self, home: Path, endpoint: str, access_key: str, secret_key: str):
        self.home = home
        self.data = home / "data"
        self.endpoint = endpoint
        self.access_key = access_key
        self.secret_key = secret_key
        self._buckets = 0

    @property
    def env(self) -> dict[str, str]:
        return {
            "MTABENCH_S3_ENDPOINT": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": "us-east-1",
        }

    def fs(self) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(
            access_key=self.access_key,
            secret_key=self.secret_key,
            region="us-east-1",
            scheme="http",
            endpoint_override=self.endpoint.removeprefix("http://"),
            allow_bucket_creation=True,
        )

    def new_bucket(self) -> str:
        self._buckets += 1
        name = f"test-{os.getpid()}-{self._buckets}"
        self.fs().create_dir(name)
        return name

    def objects(self, prefix: str) -> dict[str, bytes]:
        """Every object under bucket/prefix (relative name -> bytes), listed and read here."""
        fs = self.fs()
        infos = fs.get_file_info(pafs.FileSelector(prefix, recursive=True, allow_not_found=True))
        out = {}
        for info in infos:
            if info.type == pafs.FileType.File:
                with fs.open_input_stream(info.path) as f:
                    out[info.path[len(prefix) + 1 :]] = f.read()
        return out

    def backing_file(self, bucket_and_key: str) -> Path:
        """The file s3s-fs keeps an object in."""
        return self.data / bucket_and_key


def script_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of scripts/s3_server.sh for a server kept in `home`: none of this
    process's S3 settings, `extra` added (a user's AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MTABENCH_S3", "AWS_"))}
    return {**env, "MTABENCH_S3_HOME": str(home), **extra}


@contextmanager
def running_server(home: Path, key: str | None = None, secret: str | None = None) -> Iterator[S3Server]:
    """s3s-fs serving `home`/data until the block ends: with credentials generated into
    `home`, or with the given key and secret (as a user's AWS_* variables give them)."""
    env = script_env(home, **({"AWS_ACCESS_KEY_ID": key, "AWS_SECRET_ACCESS_KEY": secret} if key else {}))
    _script("install", env, timeout=1800)
    t0 = time.monotonic()
    try:
        endpoint = _script("start", env, timeout=60).strip()
        print(f"\ns3s-fs up at {endpoint} in {time.monotonic() - t0:.2f} s")
        if key is None:
            key, secret = (home / "credentials").read_text().split()
        yield S3Server(home, endpoint, key, secret)
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, cwd=REPO, capture_output=True, timeout=60)


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture()
def s3_env(s3_server, monkeypatch) -> S3Server:
    """This process's S3 settings point at the test server."""
    for k in S3_VARS:
        monkeypatch.delenv(k, raising=False)
    for k, v in s3_server.env.items():
        monkeypatch.setenv(k, v)
    return s3_server
