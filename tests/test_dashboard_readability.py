"""Charts a mail engineer can read, checked on the committed YAML and the samples' data.

- every table chart shows a non-zero page size: a server-paged table one of Superset's page
  sizes, a browser-paged one a positive page_length (and it may page in the browser only when
  a required single-value filter narrows it to one run or one pair);
- no legend needs more than two pages at the samples: each chart's series (its metrics x the
  distinct values of its group-by columns in its dataset, after its own filters and its series
  limit) laid out as ECharts lays a scroll legend out, in the width or height the dashboard
  gives the chart at the render check's 1400-px window.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from dataset_sql import query

REPO = Path(__file__).resolve().parents[1]
DASHBOARDS = REPO / "dashboards"
CHARTS = {
    c["uuid"]: c for c in (yaml.safe_load(p.read_text()) for p in (DASHBOARDS / "charts").glob("*.yaml"))
}
DATASETS = {
    d["uuid"]: d for d in (yaml.safe_load(p.read_text()) for p in (DASHBOARDS / "datasets").rglob("*.yaml"))
}
BOARDS = [yaml.safe_load(p.read_text()) for p in sorted((DASHBOARDS / "dashboards").glob("*.yaml"))]
SERVER_PAGE_SIZES = (10, 20, 50, 100, 200)  # Superset's table: the sizes a server-paged table offers

# Layout at the render check's window (1400 x 2200, filter bar open), measured on its screenshots:
# a 12-column row is ~1080 px wide; a grid unit of height is 8 px; a chart's header ~60 px.
ROW_PX = 1080
UNIT_PX = 8
HEADER_PX = 60
# ECharts scroll legend, Superset's defaults: 12 px text (~5.6 px a character), a 25-px icon
# with gaps; a horizontal legend leaves ~210 px to padding, the page arrows and Superset's
# All/Inv buttons; a vertical one has ~24 px per item and ~70 px of pager and padding.
CHAR_PX = 5.6
ITEM_PX = 34
H_RESERVED_PX = 210
ROW_ITEM_PX = 24
V_RESERVED_PX = 70
MAX_LEGEND_PAGES = 2


def _placements():
    for board in BOARDS:
        for node in board["position"].values():
            if isinstance(node, dict) and node.get("type") == "CHART":
                yield board, node["meta"]


def _chart_name(x) -> str:
    """A parametrize id: the chart's name (the dashboard's part of the pair gets none)."""
    return x.get("sliceName", "") if "sliceName" in x else ""


def _tables():
    return [(b, m) for b, m in _placements() if CHARTS[m["uuid"]]["viz_type"] == "table"]


@pytest.mark.parametrize("board,meta", _tables(), ids=_chart_name)
def test_every_table_shows_a_nonzero_page_size(board, meta):
    params = CHARTS[meta["uuid"]]["params"]
    if params.get("server_pagination"):
        assert params.get("server_page_length") in SERVER_PAGE_SIZES, (meta["sliceName"], params)
        return
    assert int(params.get("page_length") or 0) > 0, (meta["sliceName"], params.get("page_length"))
    if meta["sliceName"].startswith("Mailbox totals per run"):
        return  # one row per run with a mailbox log (tests/test_dashboard_limits.py SMALL_TABLES)
    # paged in the browser: every row comes at once, so a required one-value filter must
    # narrow it (a run's facts, a pair's verdict)
    narrowing = [
        f
        for f in board["metadata"]["native_filter_configuration"]
        if f["controlValues"].get("enableEmptyFilter")
        and not f["controlValues"].get("multiSelect")
        and meta["chartId"] not in f["scope"].get("excluded", [])
        and f["targets"][0]["column"]["name"] in _columns(CHARTS[meta["uuid"]])
    ]
    assert narrowing, f"{board['dashboard_title']}: {meta['sliceName']} pages in the browser unfiltered"


def _columns(chart: dict) -> set[str]:
    return {c["column_name"] for c in DATASETS[chart["dataset_uuid"]]["columns"]}


def _metric_labels(chart: dict) -> list[str]:
    ds = DATASETS[chart["dataset_uuid"]]
    names = {m["metric_name"]: m.get("verbose_name") or m["metric_name"] for m in ds["metrics"]}
    out = []
    for m in chart["params"].get("metrics") or []:
        out.append(names.get(m, m) if isinstance(m, str) else m.get("label") or m.get("sqlExpression"))
    return out


def _series(con, chart: dict) -> list[str]:
    """The legend entries the chart draws at the samples (no dashboard filter: all runs)."""
    params = chart["params"]
    metrics = _metric_labels(chart)
    groupby = params.get("groupby") or []
    if isinstance(groupby, str):
        groupby = [groupby]
    if chart["viz_type"] == "box_plot":  # one box series and its outliers, whatever the groups
        return ["boxplot", "outlier"]
    if chart["viz_type"] == "bubble_v2":
        groupby = [params["series"]] if params.get("series") else []
        metrics = [""]
    if not groupby:
        return metrics
    where = " and ".join(
        f"({f['sqlExpression']})"
        for f in params.get("adhoc_filters") or []
        if f.get("expressionType") == "SQL" and f.get("clause") == "WHERE"
    )
    rows = query(con, DATASETS[chart["dataset_uuid"]]["table_name"], where=where or None)
    groups = sorted({", ".join(str(r[c]) for c in groupby) for r in rows}, key=len, reverse=True)
    if params.get("series_limit"):
        groups = groups[: int(params["series_limit"])]  # the longest labels: the worst case
    if len(metrics) == 1:
        return groups
    return [f"{m}, {g}" for m in metrics for g in groups]


def legend_pages(labels: list[str], width_px: float, height_px: float, vertical: bool) -> int:
    if not labels:
        return 0
    if vertical:
        per_page = max(1, int((height_px - V_RESERVED_PX) // ROW_ITEM_PX))
        return math.ceil(len(labels) / per_page)
    room = width_px - H_RESERVED_PX
    pages, used = 1, 0.0
    for label in labels:
        item = ITEM_PX + CHAR_PX * len(label)
        if used and used + item > room:
            pages, used = pages + 1, 0.0
        used += item
    return pages


def test_legend_model_counts_pages(serving_con):
    # the model against the render check's screenshot of Run comparison before its series
    # limit: the samples' 53 run ids in a full-width horizontal legend read "1/11"
    ids = [r[0] for r in serving_con.execute("select run_id from runs").fetchall()]
    assert len(ids) == 56
    assert 10 <= legend_pages(ids, ROW_PX, 480, vertical=False) <= 12
    # and on Error bursts' half-width chart of error events per run by code, which read "1/3"
    codes = [
        "socket_write_failed",
        "read_timeout",
        "524 5.2.4",
        "421 4.7.0",
        "550 5.1.1",
        "451 4.3.0",
        "550",
        "451",
    ]
    assert legend_pages(codes, ROW_PX / 2, 480, vertical=False) == 3
    assert legend_pages(ids[:10], ROW_PX, 60 * UNIT_PX - HEADER_PX, vertical=True) == 1
    assert legend_pages(ids, ROW_PX, 60 * UNIT_PX - HEADER_PX, vertical=True) > MAX_LEGEND_PAGES
    assert legend_pages([], ROW_PX, 400, vertical=False) == 0


LEGENDS = [
    (b, m)
    for b, m in _placements()
    if CHARTS[m["uuid"]]["viz_type"] != "table" and CHARTS[m["uuid"]]["params"].get("show_legend", True)
]


@pytest.mark.parametrize("board,meta", LEGENDS, ids=_chart_name)
def test_no_legend_needs_more_than_two_pages(board, meta, serving_con):
    chart = CHARTS[meta["uuid"]]
    labels = _series(serving_con, chart)
    vertical = chart["params"].get("legendOrientation") in ("left", "right")
    width = ROW_PX * meta["width"] / 12
    height = meta["height"] * UNIT_PX - HEADER_PX
    pages = legend_pages(labels, width, height, vertical)
    assert pages <= MAX_LEGEND_PAGES, f"{meta['sliceName']}: {len(labels)} series, {pages} legend pages"


NUMERIC = ("BIGINT", "INTEGER", "DOUBLE", "FLOAT", "DECIMAL", "HUGEINT", "SMALLINT", "UBIGINT")


@pytest.mark.parametrize("board,meta", _tables(), ids=_chart_name)
def test_table_numbers_are_formatted(board, meta):
    """No 9067652: every number a table shows has a format (thousands separators)."""
    chart = CHARTS[meta["uuid"]]
    params = chart["params"]
    ds = DATASETS[chart["dataset_uuid"]]
    types = {c["column_name"]: str(c.get("type") or "").upper() for c in ds["columns"]}
    formats = {m["metric_name"]: m.get("d3format") for m in ds["metrics"]}
    config = params.get("column_config") or {}
    bare = []
    if params.get("query_mode") == "raw":
        for col in params.get("all_columns") or []:
            if types.get(col, "").startswith(NUMERIC) and not (config.get(col) or {}).get("d3NumberFormat"):
                bare.append(col)
    else:
        for m in params.get("metrics") or []:
            name = m if isinstance(m, str) else m.get("label")
            if not ((config.get(name) or {}).get("d3NumberFormat") or formats.get(name)):
                bare.append(name)
    assert not bare, f"{meta['sliceName']}: numbers without a format: {bare}"


def test_capacity_headers_name_the_capacity():
    """A header says what its column is: daily_capacity's capacity_* columns (the capacity the
    queue keeps up with, and the rate it rests on) are headed "Capacity ...", not with the word
    the marts gave up for it ("sustainable", next to "sustained": the median rate)."""
    headed = {
        (ds["table_name"], c["column_name"]): c.get("verbose_name") or ""
        for ds in DATASETS.values()
        for c in ds["columns"]
        if c["column_name"] in ("capacity_msgs_per_day", "capacity_rate_source")
    }
    assert headed
    wrong = {k: v for k, v in headed.items() if not v.startswith("Capacity") or "ustainab" in v}
    assert not wrong, wrong
    every_header = [c.get("verbose_name") or "" for ds in DATASETS.values() for c in ds["columns"]]
    every_header += [m.get("verbose_name") or "" for ds in DATASETS.values() for m in ds["metrics"]]
    assert not [h for h in every_header if "ustainab" in h]


def _charts_on_boards():
    for board, meta in _placements():
        yield board, CHARTS[meta["uuid"]]


def test_a_chart_of_many_runs_shows_the_top_n_and_has_a_run_filter():
    """A time series split by run draws its top N runs by default (series_limit), and its dashboard
    has a Run filter (on run_id) to pick others."""
    by_run = [
        (b, c)
        for b, c in _charts_on_boards()
        if c["viz_type"].startswith("echarts_timeseries") and "run_id" in (c["params"].get("groupby") or [])
    ]
    assert len(by_run) >= 5
    for board, chart in by_run:
        assert int(chart["params"].get("series_limit") or 0) > 0, chart["slice_name"]
        filters = board["metadata"].get("native_filter_configuration", [])
        on_run = [f for f in filters for t in f["targets"] if t.get("column", {}).get("name") == "run_id"]
        assert on_run, f"{board['dashboard_title']}: no Run filter for {chart['slice_name']!r}"


def test_a_log_axis_says_so():
    """A chart drawn on a log axis tells the reader (its description or an axis title)."""
    logged = [
        c
        for _, c in _charts_on_boards()
        if c["params"].get("logAxis") or c["params"].get("logYAxis") or c["params"].get("logXAxis")
    ]
    assert logged
    for c in logged:
        titles = ("y_axis_title", "y_axis_label", "x_axis_title", "x_axis_label")
        said = " ".join([str(c.get("description") or ""), *(str(c["params"].get(k) or "") for k in titles)])
        assert "log" in said.lower(), c["slice_name"]


def test_saturation_events_show_on_run_comparison_and_capacity():
    """The saturation events (mart saturation_events) are on Run comparison and Capacity too, not
    only on Run story: each of those dashboards places a chart whose dataset reads the mart."""
    for title in ("Run comparison", "Capacity", "Run story"):
        board = next(b for b in BOARDS if b["dashboard_title"] == title)
        sqls = [
            DATASETS[CHARTS[m["uuid"]]["dataset_uuid"]].get("sql") or ""
            for b, m in _placements()
            if b is board
        ]
        assert any("main.saturation_events" in sql for sql in sqls), title
