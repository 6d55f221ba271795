"""Open every Superset dashboard in headless Chromium and check that every chart rendered.

Runs in Superset's venv (selenium is a Superset dependency), with Debian's chromium and
/usr/bin/chromedriver:

    envs/superset/.venv/bin/python dashboards/render_check.py --base http://127.0.0.1:8088 \
        --user admin --password-file data/superset/admin_password --png-dir data/superset/screenshots

For each dashboard: log in through the form, open it, wait (on locators: the CSP forbids
eval, so no string wait_for_function) until every chart holder shows a rendered chart (an
ECharts canvas/svg or a table row) or an error / empty state, fail on any error or empty
state, record each table's page size ("Show N entries per page") and how far it runs past its
chart, save a full-page PNG per dashboard (<png-dir>/<slug>.png), then ask the chart data
API (/api/v1/chart/<id>/data/) for every chart and require rows. Prints a JSON report.

--filter-check: prove the native filters narrow the charts. For every dashboard with a Run,
Label or Baseline run filter, open it with no filter and again with the filter set to one value
(the `native_filters` URL parameter, as a shared link carries it), capture the chart data
requests the browser sends each time, replay them through /api/v1/chart/data and record
whether each chart's rows changed; the report's "filter_check" lists every chart.

--save-query-context: an authoring aid for charts written by hand in YAML (which have no
query_context, so /api/v1/chart/<id>/data/ answers 400): record the chart data request the
browser sends for each chart and store it as the chart's query_context; then run
`scripts/superset.sh export`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

import requests
from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

CHART = '[data-test="chart-grid-component"]'
RENDERED = (
    # ECharts draws on a canvas (or svg); tables render rows; big numbers a header.
    "[_echarts_instance_] canvas, [_echarts_instance_] svg, table tbody tr, .header-line"
)
FAILED = (
    '[role="alert"], .ant-alert-error, [data-test="chart-error"], .ant-empty, '
    '[data-test="empty-state"], .empty-state, .superset-empty-state'
)
CHROME_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--metrics-recording-only",
    "--hide-scrollbars",
    "--force-device-scale-factor=1",
]


class Api:
    def __init__(self, base: str, user: str, password: str):
        self.base = base.rstrip("/")
        self.s = requests.Session()
        r = self.s.post(
            f"{self.base}/api/v1/security/login",
            json={"username": user, "password": password, "provider": "db", "refresh": False},
            timeout=60,
        )
        r.raise_for_status()
        self.s.headers["Authorization"] = f"Bearer {r.json()['access_token']}"
        csrf = self.s.get(f"{self.base}/api/v1/security/csrf_token/", timeout=60)
        csrf.raise_for_status()
        self.s.headers["X-CSRFToken"] = csrf.json()["result"]
        self.s.headers["Referer"] = self.base

    def get(self, path: str, **kw) -> requests.Response:
        return self.s.get(f"{self.base}{path}", timeout=120, **kw)

    def put(self, path: str, **kw) -> requests.Response:
        return self.s.put(f"{self.base}{path}", timeout=120, **kw)

    def dashboards(self) -> list[dict]:
        q = "(page_size:100,order_column:dashboard_title,order_direction:asc)"
        return self.get(f"/api/v1/dashboard/?q={q}").json()["result"]

    def dashboard_charts(self, dash_id: int) -> list[dict]:
        return self.get(f"/api/v1/dashboard/{dash_id}/charts").json()["result"]

    def chart_rows(self, chart_id: int) -> tuple[int, int, str]:
        r = self.get(f"/api/v1/chart/{chart_id}/data/", params={"force": "true"})
        if r.status_code != 200:
            return r.status_code, 0, r.text[:300]
        body = r.json()
        rows = sum(int(res.get("rowcount") or len(res.get("data") or [])) for res in body["result"])
        errors = [res.get("error") for res in body["result"] if res.get("error")]
        return r.status_code, rows, "; ".join(map(str, errors))


def make_driver(width: int, height: int, capture: bool) -> webdriver.Chrome:
    opts = webdriver.ChromeOptions()
    for flag in CHROME_FLAGS:
        opts.add_argument(flag)
    opts.add_argument(f"--user-data-dir={tempfile.mkdtemp(prefix='mtabench-chromium-')}")
    opts.add_argument(f"--window-size={width},{height}")
    opts.binary_location = "/usr/bin/chromium"
    if capture:
        opts.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)


def login(driver: webdriver.Chrome, base: str, user: str, password: str, timeout: float) -> None:
    """Log in through the form, as a user does.

    The form is React: keys typed before it hydrates can be reset, and a submit sent then
    goes nowhere. So each attempt checks the fields hold what was typed, clicks the submit
    button, and waits a while for the redirect; a page still on /login is filled again. A
    visible error (a wrong password) stops at once.
    """
    deadline = time.monotonic() + timeout
    user_css = "input#username, input[name=username]"
    pw_css = "input#password, input[name=password]"
    attempt = 0
    while True:
        attempt += 1
        driver.get(f"{base}/login/")
        left = max(1.0, deadline - time.monotonic())
        WebDriverWait(driver, left).until(ec.element_to_be_clickable((By.CSS_SELECTOR, pw_css)))
        for css, value in ((user_css, user), (pw_css, password)):
            field = driver.find_element(By.CSS_SELECTOR, css)
            field.clear()
            field.send_keys(value)
        filled = [driver.find_element(By.CSS_SELECTOR, c).get_attribute("value") for c in (user_css, pw_css)]
        if filled == [user, password]:
            buttons = driver.find_elements(By.CSS_SELECTOR, "button[type=submit], input[type=submit]")
            if buttons:
                buttons[0].click()
            else:
                driver.find_element(By.CSS_SELECTOR, pw_css).send_keys("\n")
            try:
                WebDriverWait(driver, min(20.0, max(1.0, deadline - time.monotonic()))).until(
                    lambda d: "/login" not in d.current_url
                )
                return
            except TimeoutException:
                pass
        errors = [
            e.text.strip()
            for e in driver.find_elements(By.CSS_SELECTOR, ".ant-alert-error, .ant-form-item-explain-error")
            if e.text.strip()
        ]
        if errors:
            raise SystemExit(f"login refused: {'; '.join(errors)}")
        if time.monotonic() >= deadline:
            raise SystemExit(
                f"login: still on {driver.current_url} after {attempt} attempts in {timeout:.0f} s"
                f" (fields held {['***' if i else v for i, v in enumerate(filled)]})"
            )


def wait_for_charts(driver: webdriver.Chrome, expected: int, timeout: float) -> list[dict]:
    """Wait until each chart holder is rendered or failed; return per-chart states."""

    def states(d):
        out = []
        for el in d.find_elements(By.CSS_SELECTOR, CHART):
            failed = [
                f.text.strip() or f.get_attribute("class") for f in el.find_elements(By.CSS_SELECTOR, FAILED)
            ]
            rendered = el.find_elements(By.CSS_SELECTOR, RENDERED)
            out.append(
                {
                    "id": int(el.get_attribute("data-test-chart-id")),
                    "name": el.get_attribute("data-test-chart-name"),
                    "viz_type": el.get_attribute("data-test-viz-type"),
                    "rendered": bool(rendered) and not failed,
                    "failed": failed,
                }
            )
        return out

    def done(d):
        s = states(d)
        return s if len(s) >= expected and all(c["rendered"] or c["failed"] for c in s) else False

    try:
        result = WebDriverWait(driver, timeout, poll_frequency=0.5).until(done)
    except TimeoutException:
        return states(driver)
    time.sleep(1.5)  # let ECharts finish its entry animation before the screenshot
    return states(driver) or result


# a table chart as the reader sees it: the page size its "Show N entries per page" offers and how
# far the table runs past its chart (sideways scrolling)
TABLE_LAYOUT_JS = """
return Array.from(document.querySelectorAll(arguments[0])).map(function (holder) {
    var table = holder.querySelector('table');
    if (!table) { return null; }
    var size = holder.querySelector('.dt-select-page-size .ant-select-selection-item');
    return {
        id: Number(holder.getAttribute('data-test-chart-id')),
        page_size: size ? size.textContent.trim() : null,
        overflow_px: Math.round(table.getBoundingClientRect().width - holder.getBoundingClientRect().width)
    };
}).filter(function (x) { return x; });
"""


def table_layout(driver: webdriver.Chrome) -> dict[int, dict]:
    return {t["id"]: t for t in driver.execute_script(TABLE_LAYOUT_JS, CHART)}


# the text an ECharts chart drew beside its marks (data labels), as the reader sees it: Superset
# draws on a canvas and does not expose echarts, so the chart's instance is read from the React
# component holding it (the useRef whose value has getZr) and its zrender display list is asked
# for the text it draws (a text's lines are tspans) attached to a mark: a data label, not an axis
# or legend text; a label hidden for overlapping another is not in that list
ECHARTS_LABELS_JS = """
function instance(el) {
    var key = Object.keys(el).find(function (k) { return k.indexOf('__reactFiber$') === 0; });
    for (var f = key ? el[key] : null; f; f = f.return) {
        for (var h = f.memoizedState; h && typeof h === 'object' && 'next' in h; h = h.next) {
            var v = h.memoizedState;
            if (v && v.current && typeof v.current.getZr === 'function') { return v.current; }
        }
    }
    return null;
}
return Array.from(document.querySelectorAll(arguments[0])).map(function (holder) {
    var el = holder.querySelector('[_echarts_instance_]');
    var chart = el && instance(el);
    if (!chart) { return null; }
    var texts = chart.getZr().storage.getDisplayList(true).filter(function (d) {
        return d.type === 'tspan' && d.parent && d.parent.__hostTarget && d.style && d.style.text;
    });
    return {
        id: Number(holder.getAttribute('data-test-chart-id')),
        labels: texts.map(function (d) { return String(d.style.text); })
    };
}).filter(function (x) { return x; });
"""


def echarts_labels(driver: webdriver.Chrome) -> dict[int, list[str]]:
    """Data labels each ECharts chart draws, by chart id (charts of other kinds left out)."""
    return {c["id"]: c["labels"] for c in driver.execute_script(ECHARTS_LABELS_JS, CHART)}


def captured_query_contexts(driver: webdriver.Chrome) -> dict[int, dict]:
    """Chart data request bodies the page sent, by slice_id (needs the performance log)."""
    found: dict[int, dict] = {}
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg.get("method") != "Network.requestWillBeSent":
            continue
        req = msg["params"]["request"]
        if req.get("method") != "POST" or "/api/v1/chart/data" not in req.get("url", ""):
            continue
        body = req.get("postData")
        if body is None:
            try:
                body = driver.execute_cdp_cmd(
                    "Network.getRequestPostData", {"requestId": msg["params"]["requestId"]}
                )["postData"]
            except Exception:  # noqa: BLE001 - the request may be gone already
                continue
        qc = json.loads(body)
        slice_id = (qc.get("form_data") or {}).get("slice_id")
        if slice_id:
            found[int(slice_id)] = qc
    return found


def _rison(value) -> str:
    """Encode the small subset of rison the native_filters URL parameter needs."""
    if isinstance(value, dict):
        return "(" + ",".join(f"{k}:{_rison(v)}" for k, v in value.items()) + ")"
    if isinstance(value, list):
        return "!(" + ",".join(_rison(v) for v in value) + ")"
    if isinstance(value, bool):
        return "!t" if value else "!f"
    if isinstance(value, int | float):
        return repr(value)
    return "'" + str(value).replace("!", "!!").replace("'", "!'") + "'"


FILTER_NAMES = ("Run", "Label", "Baseline run")
RISON_SAFE = "()!:,'*-._~"


def _replay(api: Api, qc: dict) -> str:
    r = api.s.post(f"{api.base}/api/v1/chart/data", json=qc, timeout=120)
    if r.status_code != 200:
        return f"HTTP {r.status_code}"
    return json.dumps([res.get("data") for res in r.json()["result"]], sort_keys=True, default=str)


def filter_check(driver, api: Api, base: str, dash: dict, n_charts: int, timeout: float) -> dict | None:
    """Chart data without and with one native filter value, per chart (see --filter-check)."""
    meta = json.loads(api.get(f"/api/v1/dashboard/{dash['id']}").json()["result"]["json_metadata"])
    filters = [f for f in meta.get("native_filter_configuration", []) if f.get("name") in FILTER_NAMES]
    if not filters:
        return None
    nf = filters[0]
    target = nf["targets"][0]
    column = target["column"]["name"]
    values_url = f"/api/v1/datasource/table/{target['datasetId']}/column/{column}/values/"
    values = api.get(values_url).json()["result"]
    default = (nf.get("defaultDataMask", {}).get("filterState") or {}).get("value") or []
    # sorted: the values endpoint lists them in whatever order the database's distinct gives
    value = next(v for v in sorted(values, key=str) if v not in default)
    slug = dash.get("slug") or str(dash["id"])

    excluded = set(nf.get("scope", {}).get("excluded", []))

    def has_filter(qc: dict | None) -> bool:
        return any(
            f.get("col") == column and value in (f.get("val") or [])
            for q in (qc or {}).get("queries", [])
            for f in q.get("filters", [])
        )

    def capture(url: str, want_filter: bool) -> dict[int, dict]:
        driver.get_log("performance")  # drop what earlier pages logged
        driver.get(url)
        wait_for_charts(driver, n_charts, timeout)
        time.sleep(1)
        found = captured_query_contexts(driver)
        # The page may render a chart from an unfiltered request before the filter state
        # from the URL reaches it (seen on a loaded machine); the filtered request follows.
        # Keep reading the requests (the latest per chart wins) until every in-scope chart
        # sent one with the filter, or the timeout: a filter that never arrives still fails.
        deadline = time.monotonic() + (timeout if want_filter else 0)
        while time.monotonic() < deadline and not all(
            has_filter(qc) for cid, qc in found.items() if cid not in excluded
        ):
            time.sleep(1)
            found.update(captured_query_contexts(driver))
        return found

    before = capture(f"{base}/superset/dashboard/{slug}/", want_filter=False)
    state = {
        "id": nf["id"],
        "extraFormData": {"filters": [{"col": column, "op": "IN", "val": [value]}]},
        "filterState": {"value": [value]},
    }
    # percent-encoded: a run id may hold '#' (run_id#2), which would end the URL's query
    param = quote(_rison({nf["id"]: state}), safe=RISON_SAFE)
    after = capture(f"{base}/superset/dashboard/{slug}/?native_filters={param}", want_filter=True)
    charts = []
    for chart_id in sorted(set(before) | set(after)):
        b, a = before.get(chart_id), after.get(chart_id)
        sent = has_filter(a)
        charts.append(
            {
                "id": chart_id,
                "in_scope": chart_id not in excluded,
                "filter_sent": sent,
                "data_changed": None if not (a and b) else _replay(api, a) != _replay(api, b),
            }
        )
    return {"filter": nf["name"], "column": column, "value": value, "charts": charts}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", default="http://127.0.0.1:8088")
    p.add_argument("--user", default="admin")
    p.add_argument("--password-file", type=Path, required=True)
    p.add_argument("--png-dir", type=Path, action="append", default=[], help="repeatable")
    p.add_argument("--width", type=int, default=1400)
    p.add_argument("--height", type=int, default=2200)
    p.add_argument("--timeout", type=float, default=90)
    p.add_argument("--save-query-context", action="store_true")
    p.add_argument("--filter-check", action="store_true")
    p.add_argument("--report", type=Path)
    args = p.parse_args(argv)
    password = args.password_file.read_text().strip()
    base = args.base.rstrip("/")

    api = Api(base, args.user, password)
    report: dict = {"dashboards": [], "ok": True}
    driver = make_driver(args.width, args.height, args.save_query_context or args.filter_check)
    try:
        login(driver, base, args.user, password, args.timeout)
        for dash in api.dashboards():
            slug = dash.get("slug") or str(dash["id"])
            charts = api.dashboard_charts(dash["id"])
            t0 = time.monotonic()
            driver.get(f"{base}/superset/dashboard/{slug}/")
            states = wait_for_charts(driver, len(charts), args.timeout)
            took = round(time.monotonic() - t0, 1)
            tables = table_layout(driver)
            labels = echarts_labels(driver)
            for png_dir in args.png_dir:
                png_dir.mkdir(parents=True, exist_ok=True)
                full = driver.execute_script("return document.documentElement.scrollHeight")
                driver.set_window_size(args.width, max(args.height, int(full)))
                driver.save_screenshot(str(png_dir / f"{slug}.png"))
            saved = []
            if args.save_query_context:
                for chart_id, qc in captured_query_contexts(driver).items():
                    r = api.put(
                        f"/api/v1/chart/{chart_id}",
                        json={"query_context": json.dumps(qc), "query_context_generation": True},
                    )
                    if r.status_code != 200:
                        raise SystemExit(f"PUT chart {chart_id}: {r.status_code} {r.text[:300]}")
                    saved.append(chart_id)
            data = {}
            for c in charts:
                status, rows, err = api.chart_rows(c["id"])
                data[c["id"]] = {"status": status, "rows": rows, "error": err}
            entry = {
                "id": dash["id"],
                "slug": slug,
                "title": dash["dashboard_title"],
                "seconds": took,
                "charts_expected": len(charts),
                "charts": [
                    dict(s, data=data.get(s["id"]), table=tables.get(s["id"]), labels=labels.get(s["id"]))
                    for s in states
                ],
                "query_context_saved": saved,
            }
            if args.filter_check:
                driver.set_window_size(args.width, args.height)
                entry["filter_check"] = filter_check(driver, api, base, dash, len(charts), args.timeout)
            entry["ok"] = (
                len(states) == len(charts)
                and all(s["rendered"] and not s["failed"] for s in states)
                and all(d["status"] == 200 and d["rows"] > 0 and not d["error"] for d in data.values())
            )
            report["ok"] &= entry["ok"]
            report["dashboards"].append(entry)
    finally:
        driver.quit()
    text = json.dumps(report, indent=2)
    if args.report:
        args.report.write_text(text)
    print(text)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
