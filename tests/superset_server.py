"""One real Superset 6.1 for the test session, shared by every test that needs it.

Fresh metadata DB and serving DuckDB in a temp dir (the pipeline runs as a subprocess while
`scripts/superset.sh setup` builds Superset's venv), the YAML imported, gunicorn on 127.0.0.1 on
a free port; stopped at the end of the session. conftest.py registers the `superset` fixture.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import requests

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "superset.sh"
SUPERSET_PY = REPO / "envs" / "superset" / ".venv" / "bin" / "python"
ROOT_VENV_BIN = REPO / ".venv" / "bin"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ensure_chromium() -> None:
    if Path("/usr/bin/chromium").exists() and Path("/usr/bin/chromedriver").exists():
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.fail("chromium + chromium-driver missing (apt-get install chromium chromium-driver)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(
        ["apt-get", "install", "-y", "-qq", "chromium", "chromium-driver"],
        check=True,
        env=env,
        stdout=subprocess.DEVNULL,
    )


def _mtabench_cmd() -> list[str]:
    exe = ROOT_VENV_BIN / "mtabench"
    return [str(exe)] if exe.exists() else ["uv", "run", "--frozen", "mtabench"]


def _run(cmd, env, timeout=600, check=True) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


class Superset:
    def __init__(self, data: Path, port: int, env: dict):
        self.data = data
        self.port = port
        self.env = env
        self.base = f"http://127.0.0.1:{port}"
        self.state = data / "superset"
        self.serving = data / "serving" / "mtabench.duckdb"
        self._api: requests.Session | None = None

    def sh(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        return _run(["bash", str(SCRIPT), *args], self.env, timeout=timeout)

    @property
    def password(self) -> str:
        return (self.state / "admin_password").read_text().strip()

    def api(self) -> requests.Session:
        if self._api is None:
            s = requests.Session()
            r = s.post(
                f"{self.base}/api/v1/security/login",
                json={"username": "admin", "password": self.password, "provider": "db", "refresh": False},
                timeout=60,
            )
            r.raise_for_status()
            s.headers["Authorization"] = f"Bearer {r.json()['access_token']}"
            s.headers["X-CSRFToken"] = s.get(f"{self.base}/api/v1/security/csrf_token/", timeout=60).json()[
                "result"
            ]
            s.headers["Referer"] = self.base
            self._api = s
        return self._api

    def listing(self, kind: str) -> list[dict]:
        r = self.api().get(f"{self.base}/api/v1/{kind}/?q=(page_size:100)", timeout=60)
        r.raise_for_status()
        return r.json()["result"]


@pytest.fixture(scope="session")
def superset(tmp_path_factory):
    t0 = time.monotonic()
    data = tmp_path_factory.mktemp("superset-data")
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MTABENCH_", "SUPERSET_")) or k == "MTABENCH_SUPERSET_SECRET_KEY"
    }
    env.update(MTABENCH_DATA=str(data), MTABENCH_SUPERSET_PORT=str(port))
    # The pipeline (serving DuckDB) and Superset's set-up run side by side.
    pipeline = subprocess.Popen(
        [*_mtabench_cmd(), "run"],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    s = Superset(data, port, env)
    try:
        s.sh("setup", timeout=900)
        out, _ = pipeline.communicate(timeout=900)
        assert pipeline.returncode == 0, out[-3000:]
        assert s.serving.exists()
        s.sh("import")
        s.sh("serve", timeout=300)
        print(f"\nsuperset fixture ready in {time.monotonic() - t0:.0f} s")
        yield s
    finally:
        if pipeline.poll() is None:
            pipeline.kill()
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, cwd=REPO, capture_output=True, timeout=120)
