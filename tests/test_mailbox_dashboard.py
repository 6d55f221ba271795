"""The Mailbox side dashboard's YAML against the built marts and the raw logs.

The committed datasets' SQL runs on the real pipeline's DuckDB; the figures it charts must equal
counts made by awk over the raw files (Dovecot's session-end lines, Postfix's smtpd `client=`
and qmgr `size=` lines), not by our parser. The browser render (rows in every chart, filters)
is tests/test_superset_dashboards.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import REPO, SAMPLES, found

DASHBOARDS = REPO / "dashboards"
MAILBOX_RUNS = [p.parent for p in found(SAMPLES.glob("runs/*/dovecot.log.gz"), "Dovecot logs")]

# per minute (RFC 3339 stamp cut to the minute, UTC): sessions, retrieved, bytes, zero-byte sessions
# of every logged-in session's end line (POP3 `retr=msgs/bytes`, IMAP `body_count= body_bytes=`)
AWK_DOVECOT = r"""
/ dovecot: pop3\(/ && / retr=[0-9]+\/[0-9]+,/ {
    match($0, / retr=[0-9]+\/[0-9]+,/); split(substr($0, RSTART + 6, RLENGTH - 7), v, "/")
    count(substr($1, 1, 16), v[1], v[2])
}
/ dovecot: imap\(/ && / body_count=[0-9]+ body_bytes=[0-9]+/ {
    match($0, / body_count=[0-9]+/); n = substr($0, RSTART + 12, RLENGTH - 12)
    match($0, / body_bytes=[0-9]+/); b = substr($0, RSTART + 12, RLENGTH - 12)
    count(substr($1, 1, 16), n, b)
}
function count(minute, n, b) { s[minute]++; r[minute] += n; by[minute] += b; if (b == 0) z[minute]++ }
END { for (m in s) print m, s[m], r[m], by[m], z[m] + 0 }
"""

# per minute (syslog HH:MM): messages smtpd accepted (`client=`, first line per queue id) and the
# sum of qmgr's size= of those messages
AWK_POSTFIX = r"""
$5 ~ /^postfix\/smtpd\[/ && $7 ~ /^client=/ {
    q = $6; sub(/:$/, "", q); if (!(q in at)) at[q] = substr($3, 1, 5)
}
$5 ~ /^postfix\/qmgr\[/ && / size=[0-9]+/ {
    q = $6; sub(/:$/, "", q); match($0, / size=[0-9]+/); size[q] = substr($0, RSTART + 6, RLENGTH - 6)
}
END { for (q in at) { n[at[q]]++; if (q in size) b[at[q]] += size[q] } for (m in n) print m, n[m], b[m] + 0 }
"""


def awk(program: str, gz: Path) -> list[list[str]]:
    text = subprocess.run(
        f"zcat {gz} | awk '{program}'", shell=True, capture_output=True, text=True, check=True
    ).stdout
    return [line.split() for line in text.splitlines()]


def load(sub: str) -> dict[str, dict]:
    return {
        (c := yaml.safe_load(p.read_text()))["uuid"]: c | {"_file": p.name}
        for p in (DASHBOARDS / sub).rglob("*.yaml")
    }


DATASETS = load("datasets")
CHARTS = load("charts")
DASHBOARD = yaml.safe_load((DASHBOARDS / "dashboards" / "mailbox_side.yaml").read_text())
ON_PAGE = [
    CHARTS[n["meta"]["uuid"]]
    for n in DASHBOARD["position"].values()
    if isinstance(n, dict) and n.get("type") == "CHART"
]


def dataset(name: str) -> dict:
    return next(d for d in DATASETS.values() if d["table_name"] == name)


def test_the_dashboard_has_the_issue_charts_each_naming_its_source():
    assert DASHBOARD["slug"] == "mailbox-side" and len(ON_PAGE) == 4
    titles = " | ".join(c["slice_name"] for c in ON_PAGE)
    for want in (
        "SMTP in",
        "POP/IMAP out",
        "Bytes per minute each way",
        "Zero-byte",
        "Mailbox totals per run",
    ):
        assert want in titles, want
    for c in ON_PAGE:
        assert any(src in c["slice_name"] for src in ("Postfix", "Dovecot", "server log")), c["slice_name"]
        assert c["query_context"], f"{c['_file']}: no query_context (render_check.py --save-query-context)"
    filters = {f["name"]: f for f in DASHBOARD["metadata"]["native_filter_configuration"]}
    assert {"Label", "Run"} <= set(filters)
    for f in filters.values():
        assert f["scope"] == {"rootPath": ["ROOT_ID"], "excluded": []}  # every chart follows them


@pytest.mark.parametrize("run", MAILBOX_RUNS, ids=lambda p: p.name)
def test_charted_minutes_equal_awk_counts_over_the_raw_logs(con, run):
    cur = con.execute(
        f"select * from ({dataset('mailbox_by_minute')['sql']}) where run_id = ? order by minute_at",
        [run.name],
    )
    names = [d[0] for d in cur.description]
    rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    assert rows, run.name
    want = {m: tuple(map(int, v)) for m, *v in awk(AWK_DOVECOT, run / "dovecot.log.gz")}
    assert sum(v[0] for v in want.values()) > 50  # a real drain
    cols = ("mailbox_sessions", "msgs_retrieved", "bytes_retrieved", "zero_byte_sessions")
    got = {
        r["minute_at"].strftime("%Y-%m-%dT%H:%M"): tuple(r[c] for c in cols)
        for r in rows
        if r["mailbox_sessions"]
    }
    assert got == want
    smtp = {
        r["minute_at"].strftime("%H:%M"): (r["smtp_received"], r["smtp_bytes_in"])
        for r in rows
        if r["smtp_received"]
    }
    maillog = run / "maillog.gz"
    if not maillog.exists():  # rabid alone: no SMTP side
        assert smtp == {}
        return
    counted = {m: (int(n), int(b)) for m, n, b in awk(AWK_POSTFIX, maillog)}
    assert sum(n for n, _ in counted.values()) > 1000
    assert smtp == counted


def test_no_chart_can_cut_rows_silently(con):
    """Each chart's row limit is far above what its dataset can return. A table paged on the
    server: its saved query asks for one page, its row-count query for the chart's row limit;
    one paged in the browser asks for the row limit at once."""
    for c in ON_PAGE:
        ds = DATASETS[c["dataset_uuid"]]
        n = con.execute(f"select count(*) from ({ds['sql']})").fetchone()[0]
        params = c["params"]
        assert params["row_limit"] >= max(1000 * n, 1_000_000), c["_file"]
        queries = yaml.safe_load(c["query_context"])["queries"]
        if c["viz_type"] == "table" and not params.get("server_pagination"):
            # one row per run with a mailbox log, paged in the browser (tests/test_dashboard_limits.py
            # SMALL_TABLES): one query for every row
            assert [q["row_limit"] for q in queries] == [params["row_limit"]], c["_file"]
            assert int(params["page_length"]) > 0, c["_file"]
        elif c["viz_type"] == "table":
            page = [q["row_limit"] for q in queries if not q.get("is_rowcount")]
            counted = [q["row_limit"] for q in queries if q.get("is_rowcount")]
            assert page == [params["server_page_length"]], (c["_file"], page)
            assert counted == [params["row_limit"]], (c["_file"], counted)
        else:
            limits = {q["row_limit"] for q in queries if "row_limit" in q}
            assert limits == {params["row_limit"]}, (c["_file"], limits)


def test_labels_pass_through_the_native_filters_url(con):
    labels = [
        r[0]
        for r in con.execute(f"select distinct label from ({dataset('mailbox_by_run')['sql']})").fetchall()
    ]
    # one label per run with a Dovecot log, in any sample folder (runs/, variants/)
    assert len(labels) == len(list(SAMPLES.glob("*/*/dovecot.log.gz")))
    assert not [label for label in labels if set(label) & set("+/()")]
