"""The public marts after a real `mtabench run` over samples/ (ingest, dbt build, GX, publish)."""

from __future__ import annotations

from collections import Counter
from datetime import datetime

from conftest import SAMPLES

S8 = "seed000-s8-active-limit-50000"


def test_every_sample_run_is_in_runs(con):
    run_ids = {r[0] for r in con.execute("select run_id from runs").fetchall()}
    for manifest in SAMPLES.rglob("run.toml"):
        folder_id = next(
            line.split('"')[1] for line in manifest.read_text().splitlines() if line.startswith("run_id")
        )
        assert folder_id in run_ids or any(r.startswith(folder_id + "#") for r in run_ids), folder_id


def test_seed000_hour_long_run_is_one_run_across_midnight(con):
    minutes, messages, first, last = con.execute(
        "select count(*), sum(messages), min(minute_at), max(minute_at) from minutes where run_id = ?", [S8]
    ).fetchone()
    assert (minutes, messages) == (73, 197_465)
    # rows 23:52 -> 01:04 Asia/Shanghai (UTC+8); minute_at is the start of each covered minute
    assert first == datetime(2009, 6, 8, 15, 51) and last == datetime(2009, 6, 8, 17, 3)
    status, total = con.execute("select status, total_messages from runs where run_id = ?", [S8]).fetchone()
    assert (status, total) == ("ok", 197_465)


def test_seed000_451_errors_land_in_the_minutes_they_were_printed_before(con):
    got = con.execute(
        "select clock_label, count(*) from events e join minutes m using (run_id, minute_offset) "
        "where run_id = ? group by 1 order by 1",
        [S8],
    ).fetchall()
    # seed 000 prints 3 "Server error:451" before row 23:52, 2 before 00:21, 2 before 00:34
    assert got == [("00:21", 2), ("00:34", 2), ("23:52", 3)]
    assert con.execute("select distinct smtp_code from events where run_id = ?", [S8]).fetchall() == [(451,)]


def test_d_errors_events_by_code_equal_a_plain_count(con):
    text = (SAMPLES / "runs/d-errors-rcpt-rejects/postal.csv").read_text()
    plain = Counter(int(line[13:16]) for line in text.splitlines() if line.startswith("Server error:"))
    got = dict(
        con.execute(
            "select smtp_code, count(*) from events "
            "where run_id = 'd-errors-rcpt-rejects' and kind = 'server_error' group by 1"
        ).fetchall()
    )
    assert got == plain
    (n_rows,) = con.execute(
        "select count(*) from minutes where run_id = 'd-errors-rcpt-rejects' and has_load_row"
    ).fetchone()
    assert n_rows == 4


def test_d0_is_a_failed_run_with_its_events(con):
    status, reason = con.execute(
        "select status, status_reason from runs where run_id = 'd0-postal-segfault-connlimit'"
    ).fetchone()
    assert status == "failed" and "no per-minute rows" in reason
    (events,) = con.execute(
        "select count(*) from events where run_id = 'd0-postal-segfault-connlimit' and source = 'postal'"
    ).fetchone()
    text = (SAMPLES / "runs/d0-postal-segfault-connlimit/postal.csv").read_text().splitlines()
    assert events == sum(1 for line in text if line.startswith(("Server error:", "Can't write to socket.")))


def test_minute_at_follows_the_manifest_window(con):
    # a-baseline-t5 ran 22:05:11 -> 22:09:31 UTC; its rows are labelled 22:06..22:09 (end of minute)
    got = con.execute(
        "select clock_label, minute_at from minutes where run_id = 'a-baseline-t5' and has_load_row "
        "order by minute_offset"
    ).fetchall()
    assert got[0] == ("22:06", datetime(2026, 11, 21, 22, 5))
    assert got[-1] == ("22:09", datetime(2026, 11, 21, 22, 8))


def test_rates_use_full_minutes_only(con):
    # a-baseline-t5 rows: 4954 (partial first), 4902, 3767, 3087
    peak, median, total = con.execute(
        "select peak_msgs_per_min, sustained_msgs_per_min, total_messages from runs "
        "where run_id = 'a-baseline-t5'"
    ).fetchone()
    assert (peak, median, total) == (4902, 3767, 4954 + 4902 + 3767 + 3087)


def test_daily_capacity_is_rate_times_1440(con):
    rows = con.execute(
        "select capacity_status, sustained_msgs_per_min, sustained_msgs_per_day, peak_msgs_per_min, "
        "peak_msgs_per_day, delivered_msgs_per_min, delivered_msgs_per_day from daily_capacity"
    ).fetchall()
    assert len(rows) >= 25
    for status, sustained, sustained_day, peak, peak_day, delivered, delivered_day in rows:
        if status == "short":  # a day extrapolated from one or two minutes is no figure
            assert (sustained_day, peak_day, delivered_day) == (None, None, None)
            continue
        # whole messages: the rate x 1440, rounded
        if sustained is not None:
            assert sustained_day == round(sustained * 1440) and peak_day == round(peak * 1440)
        if delivered is not None:
            assert delivered_day == round(delivered * 1440)


def test_error_bursts_split_on_clean_minutes(con):
    bursts = con.execute(
        "select start_offset, end_offset, errors, dominant_code from error_bursts "
        "where run_id = ? order by burst_no",
        [S8],
    ).fetchall()
    # error minutes of the run: 23:52 (3), 00:21 (15), 00:34 (2), separated by clean minutes
    assert [(b[0], b[1], b[2]) for b in bursts] == [(0, 0, 3), (29, 29, 15), (42, 42, 2)]
    assert {b[3] for b in bursts} == {"451"}
    d = con.execute(
        "select minutes, errors from error_bursts where run_id = 'd-errors-rcpt-rejects'"
    ).fetchall()
    assert d == [(4, 38 + 222 + 239 + 216)]


def test_prompt_separated_runs_get_numbered_ids(con):
    ids = [
        r[0]
        for r in con.execute(
            "select run_id from runs where run_id like 'seed000-s9-proxymap%' order by run_id"
        ).fetchall()
    ]
    assert ids == [f"seed000-s9-proxymap#{i}" for i in range(1, 6)]


def test_serving_file_was_published(built_db):
    assert (built_db.parent / "serving" / "mtabench.duckdb").stat().st_size > 0
