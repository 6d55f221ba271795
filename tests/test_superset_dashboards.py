"""The Superset dashboards in dashboards/, on a real Superset 6.1 and a real headless Chromium.

The Superset is the session's (tests/superset_server.py: fresh metadata DB and serving DuckDB in a
temp dir, the YAML imported, gunicorn on 127.0.0.1 on a free port). The render check needs
chromium + chromium-driver (installed with apt-get when missing and running as root, as in CI).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from pathlib import Path

import requests
from superset_server import REPO, SCRIPT, SUPERSET_PY, Superset, _ensure_chromium, _mtabench_cmd, _run

ASSET_DIRS = ("databases", "datasets", "charts", "dashboards")


def _counts(s: Superset) -> dict[str, list[str]]:
    out = {}
    for kind in ("dashboard", "chart", "dataset", "database"):
        rows = s.listing(kind)
        name = {
            "dashboard": "dashboard_title",
            "chart": "slice_name",
            "dataset": "table_name",
            "database": "database_name",
        }[kind]
        out[kind] = sorted(r[name] for r in rows)
    return out


def _committed_yaml() -> dict[str, bytes]:
    root = REPO / "dashboards"
    files = {"metadata.yaml": (root / "metadata.yaml").read_bytes()}
    for sub in ASSET_DIRS:
        for p in sorted((root / sub).rglob("*.yaml")):
            files[p.relative_to(root).as_posix()] = p.read_bytes()
    return files


def test_every_dashboard_renders_with_data(superset):
    _ensure_chromium()
    committed = _committed_yaml()
    n_dash = sum(1 for k in committed if k.startswith("dashboards/"))
    # into the temporary data folder only: `make screenshots` refreshes docs/screenshots
    png_dir = superset.data / "screenshots"
    report_path = superset.data / "render_report.json"
    t0 = time.monotonic()
    p = _run(
        [
            str(SUPERSET_PY),
            str(REPO / "dashboards" / "render_check.py"),
            "--base",
            superset.base,
            "--user",
            "admin",
            "--password-file",
            str(superset.state / "admin_password"),
            "--png-dir",
            str(png_dir),
            "--report",
            str(report_path),
            "--filter-check",
        ],
        superset.env,
        check=False,
    )
    print(f"render check: {time.monotonic() - t0:.0f} s")
    assert report_path.exists(), p.stdout[-3000:] + p.stderr[-3000:]
    report = json.loads(report_path.read_text())
    problems = []
    for d in report["dashboards"]:
        for c in d["charts"]:
            if not c["rendered"] or c["failed"]:
                problems.append(f"{d['title']}: {c['name']!r} not rendered: {c['failed']}")
            data = c["data"] or {}
            if data.get("status") != 200 or not data.get("rows") or data.get("error"):
                problems.append(f"{d['title']}: {c['name']!r} data API: {data}")
            table = c.get("table")
            if table and table["page_size"] in ("0", None):
                problems.append(f"{d['title']}: {c['name']!r} shows {table['page_size']} entries per page")
            if table and table["overflow_px"] > 2:
                problems.append(f"{d['title']}: {c['name']!r} runs {table['overflow_px']} px past its chart")
        if len(d["charts"]) != d["charts_expected"] or not d["charts"]:
            problems.append(f"{d['title']}: {len(d['charts'])} of {d['charts_expected']} charts on the page")
    assert not problems, "\n".join(problems)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert len(report["dashboards"]) == n_dash >= 3
    titles = {d["title"] for d in report["dashboards"]}
    assert {
        "Run comparison",
        "Error bursts",
        "Capacity",
        "Which setting won",
        "Mailbox side",
        "Run story",
    } <= titles
    tables = [c for d in report["dashboards"] for c in d["charts"] if c["viz_type"] == "table"]
    assert len(tables) >= 7 and all(c["table"] for c in tables), tables
    # Native filters narrow every chart in their scope: the browser sends the filter with each
    # chart's data request and the rows differ from the unfiltered page; a chart the filter's
    # saved scope excludes (the ranked table of Which setting won) is left as it was.
    checked = 0
    for d in report["dashboards"]:
        fc = d["filter_check"]
        assert fc and len(fc["charts"]) == len(d["charts"]), (d["title"], fc)
        for c in fc["charts"]:
            if c["in_scope"]:
                assert c["filter_sent"] and c["data_changed"], (d["title"], fc["filter"], c)
                checked += 1
            else:
                assert not c["filter_sent"] and c["data_changed"] is False, (d["title"], c)
    assert checked >= len(report["dashboards"]) * 2
    assert any(not c["in_scope"] for d in report["dashboards"] for c in d["filter_check"]["charts"])
    _bubbles_carry_run_ids(report, superset.serving)
    for d in report["dashboards"]:
        png = png_dir / f"{d['slug']}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.stat().st_size > 20_000, png


def _bubbles_carry_run_ids(report: dict, serving: Path) -> None:
    """The bubble chart labels its bubbles (dashboards/superset_config.py): the texts ECharts drew
    beside its marks, read from the chart in the page, are run ids of the runs it plots (an error
    rate above 0 and a sustained rate), and at least a third of those runs are named (a label
    that would overlap one drawn before it is left off: 15-18 of the samples' 26 are drawn)."""
    import duckdb

    with duckdb.connect(str(serving), read_only=True) as con:
        plotted = {
            r[0]
            for r in con.execute(
                "select run_id from main.runs where error_rate > 0 and sustained_msgs_per_min is not null"
            ).fetchall()
        }
    bubbles = [c for d in report["dashboards"] for c in d["charts"] if c["viz_type"] == "bubble_v2"]
    assert bubbles and len(plotted) >= 10, (bubbles, plotted)
    for c in bubbles:
        drawn = set(c["labels"] or [])
        assert drawn <= plotted, (c["name"], sorted(drawn - plotted))
        assert len(drawn) >= len(plotted) / 3, (c["name"], sorted(drawn), sorted(plotted))


def test_reimport_is_idempotent(superset):
    before = _counts(superset)
    assert len(before["database"]) == 1
    superset.sh("import")
    after = _counts(superset)
    assert after == before
    for kind, names in after.items():
        assert len(names) == len(set(names)), f"duplicate {kind}: {names}"
    db = superset.listing("database")[0]
    url = f"{superset.base}/api/v1/database/{db['id']}/connection"
    detail = superset.api().get(url, timeout=60).json()["result"]
    assert detail["sqlalchemy_uri"] == f"duckdb:///{superset.serving}"
    extra = detail["extra"] if isinstance(detail["extra"], dict) else json.loads(detail["extra"])
    assert extra["engine_params"]["connect_args"]["read_only"] is True
    assert detail["allow_dml"] is False


def test_export_reproduces_committed_yaml(superset, tmp_path):
    superset.sh("export", str(tmp_path))
    exported = {"metadata.yaml": (tmp_path / "metadata.yaml").read_bytes()}
    for sub in ASSET_DIRS:
        for p in sorted((tmp_path / sub).rglob("*.yaml")):
            exported[p.relative_to(tmp_path).as_posix()] = p.read_bytes()
    committed = _committed_yaml()
    assert sorted(exported) == sorted(committed)
    differ = [k for k in committed if exported[k] != committed[k]]
    assert not differ, f"export differs from the committed YAML: {differ}"


def _lock_error(text: str) -> bool:
    t = text.lower()
    return "could not set lock" in t or "conflicting lock" in t or "lock on file" in t


def test_queries_survive_republishing(superset):
    """Readers never see a lock while `mtabench publish` replaces the serving file."""
    api = superset.api()
    charts = superset.listing("chart")
    db_id = superset.listing("database")[0]["id"]
    env = dict(superset.env)
    stop = threading.Event()
    published: list[int] = []

    def republish():
        for _ in range(40):  # bounded
            if stop.is_set():
                break
            p = subprocess.run(
                [*_mtabench_cmd(), "publish"], env=env, cwd=REPO, capture_output=True, text=True
            )
            published.append(p.returncode)

    t = threading.Thread(target=republish)
    t.start()
    failures = []
    queries = 0
    deadline = time.monotonic() + 25
    try:
        while time.monotonic() < deadline and t.is_alive():
            for c in charts[:4]:
                r = api.get(
                    f"{superset.base}/api/v1/chart/{c['id']}/data/", params={"force": "true"}, timeout=60
                )
                queries += 1
                if r.status_code != 200 or _lock_error(r.text):
                    failures.append((c["slice_name"], r.status_code, r.text[:300]))
            r = api.post(
                f"{superset.base}/api/v1/sqllab/execute/",
                json={
                    "database_id": db_id,
                    "sql": "select count(*) as n from main.minutes",
                    "schema": "main",
                    "runAsync": False,
                    "select_as_cta": False,
                },
                timeout=60,
            )
            queries += 1
            if r.status_code != 200 or _lock_error(r.text) or r.json().get("status") != "success":
                failures.append(("sqllab", r.status_code, r.text[:300]))
    finally:
        stop.set()
        t.join(timeout=120)
    assert published and all(rc == 0 for rc in published), published
    assert len(published) >= 3 and queries >= 10, (len(published), queries)
    assert not failures, failures[:5]


def _listening(pids: set[int]) -> list[str]:
    inodes = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link.startswith("socket:["):
                    inodes.add(link[8:-1])
        except (FileNotFoundError, PermissionError):
            continue
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:  # LISTEN
                found.append(f[1])
    return found


def _addr(hexaddr: str) -> str:
    ip, port = hexaddr.split(":")
    if len(ip) == 8:
        return ".".join(str(int(ip[i : i + 2], 16)) for i in (6, 4, 2, 0)) + f":{int(port, 16)}"
    return f"[{ip}]:{int(port, 16)}"


def test_superset_listens_on_loopback_only(superset):
    master = int((superset.state / "gunicorn.pid").read_text())
    pids = {master}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (FileNotFoundError, IndexError, ValueError):
                continue
            if ppid == master:
                pids.add(int(p.name))
    addrs = [_addr(a) for a in _listening(pids)]
    assert addrs, "gunicorn has no listening socket?"
    assert all(a.startswith("127.0.0.1:") for a in addrs), addrs
    assert f"127.0.0.1:{superset.port}" in addrs


def _sqllab(superset, sql: str) -> requests.Response:
    db_id = superset.listing("database")[0]["id"]
    return superset.api().post(
        f"{superset.base}/api/v1/sqllab/execute/",
        json={"database_id": db_id, "sql": sql, "schema": "main", "runAsync": False, "select_as_cta": False},
        timeout=60,
    )


def test_sql_lab_cannot_reach_the_file_system(superset, tmp_path):
    """A logged-in user's SQL Lab queries read the serving tables and nothing else on disk."""
    ok = _sqllab(superset, "select count(*) as n from main.minutes")
    assert ok.status_code == 200 and ok.json()["status"] == "success", ok.text[:500]
    target = tmp_path / "copied.csv"
    secret = superset.state / "secret_key"
    assert secret.exists()
    attempts = {
        "read_text": "select * from read_text('/etc/hostname')",
        "secret": f"select content from read_text('{secret}')",
        "glob": "select * from glob('/etc/*')",
        "copy": f"copy (select 1 as x) to '{target}'",
        "unlock": "set enable_external_access = true",
        "attach": f"attach '{tmp_path / 'other.duckdb'}' as other",
    }
    for name, sql in attempts.items():
        r = _sqllab(superset, sql)
        body = r.text
        assert r.status_code != 200 or r.json().get("status") != "success", (name, body[:500])
        assert secret.read_text().strip() not in body, name
    # refused by name before DuckDB runs them (Superset's disallowed functions, then the serving
    # guard); DuckDB's own refusal is tests/test_serving_guard.py's connection test
    refusals = ("disallowed function", "not allowed on the serving database", "disabled by configuration")
    for name in ("read_text", "secret", "glob"):
        r = _sqllab(superset, attempts[name])
        assert any(m in r.text for m in refusals), (name, r.text[:500])
    assert not target.exists() and not (tmp_path / "other.duckdb").exists()


def test_setup_never_puts_the_admin_password_on_a_command_line(superset, tmp_path):
    import secrets

    password = "pw-" + secrets.token_urlsafe(12)
    env = dict(
        superset.env, MTABENCH_SUPERSET_HOME=str(tmp_path / "state"), MTABENCH_SUPERSET_PASSWORD=password
    )
    proc = subprocess.Popen(
        ["bash", str(SCRIPT), "setup"], env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    seen: list[str] = []
    procs = 0
    while proc.poll() is None:  # every process's command line, as `ps -ef` shows them
        for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
            try:
                args = cmdline.read_bytes()
            except OSError:
                continue
            procs += 1
            if password.encode() in args:
                seen.append(args.replace(b"\0", b" ").decode(errors="replace"))
        time.sleep(0.02)
    out = proc.stdout.read().decode(errors="replace")
    assert proc.returncode == 0, out[-3000:]
    assert procs > 100 and not seen, seen[:3]
    check = (
        "from superset.app import create_app\n"
        "import sys\n"
        "app = create_app()\n"
        "with app.app_context():\n"
        "    sm = app.appbuilder.sm\n"
        "    good = sm.auth_user_db('admin', sys.stdin.read())\n"
        "    print(good is not None, sm.auth_user_db('admin', 'wrong'))\n"
    )
    ok = subprocess.run(
        [str(SUPERSET_PY), "-c", check],
        input=password,
        env={**env, "SUPERSET_CONFIG_PATH": str(REPO / "dashboards/superset_config.py")},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ok.stdout.split()[-2:] == ["True", "None"], ok.stdout[-2000:] + ok.stderr[-2000:]


def test_second_make_serve_notices_the_running_server(superset):
    """`make serve` runs `superset.sh up`: the first sets up and imports quietly (log file),
    the second sees the same import already served and does nothing."""
    first = superset.sh("up", timeout=900)
    m = re.search(r"setup and import \(log: (\S+)\)", first.stdout)
    assert m and Path(m.group(1)).stat().st_size > 0, first.stdout
    assert "already running" in first.stdout and len(first.stdout.splitlines()) <= 3, first.stdout
    second = superset.sh("up")
    assert "dashboards and serving path unchanged, nothing to import" in second.stdout, second.stdout
    assert "setup and import" not in second.stdout
