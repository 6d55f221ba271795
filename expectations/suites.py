"""Great Expectations suites for the landing tables and the marts, defined in code.

Each check validates the DataFrame of one SQL query against the DuckDB file (GX's SQL
datasource returns empty results on DuckDB, see notes/stack.md). Derived columns in
the queries (e.g. `unaccounted_lines`) let a plain column expectation state a
cross-column rule such as parsed + noise + quarantined = lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingest.accounting import landed_lines_sql


@dataclass(frozen=True)
class Check:
    name: str  # asset name in GX and in messages
    sql: str  # may hold `{files}`: where a file_id predicate goes (see `scoped`)
    expectations: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # Per-run checks (docs/pipeline.md): each row belongs to one run (`run_id`,
    # a folder's run or its `#n` runs) or one landed file (`file_id`) and every expectation
    # judges rows within it, so validate may check only the runs that changed. None: every row.
    per_run: str | None = None

    def scoped(self, predicate: str = "true") -> str:
        """The check's query over the rows `predicate` keeps (a predicate on `per_run`)."""
        if "{files}" in self.sql:
            return self.sql.replace("{files}", predicate)
        if predicate == "true":
            return self.sql
        return f"select * from ({self.sql}) as checked where {predicate}"


MAX_MONITOR_LEAD_MINUTES = 15
# ministat's confidence levels as the comparisons mart's column suffixes, lowest first
LEVELS = ("80", "90", "95", "98", "99", "99_5")
VERDICTS_MATCH = " and ".join(f"is_significant_{s} = (abs(difference) > margin_{s})" for s in LEVELS)
# significant at a higher confidence implies significant at every lower one
LEVELS_NEST = " and ".join(
    f"(not is_significant_{hi} or is_significant_{lo})" for lo, hi in zip(LEVELS, LEVELS[1:], strict=False)
)
# the mailbox side's counters in minutes and runs (docs/mailbox.md)
MAILBOX_COUNTS = (
    "mailbox_sessions",
    "pop3_sessions",
    "imap_sessions",
    "mailbox_logins",
    "mailbox_login_failures",
    "mailbox_disconnects",
    "msgs_retrieved",
    "msgs_deleted",
    "bytes_retrieved",
    "zero_byte_sessions",
)
RABID_COUNTS = (
    "rabid_messages",
    "rabid_data_kb",
    "rabid_errors",
    "rabid_connections",
    "rabid_imap_connections",
)


def _nonneg(*cols: str) -> list[tuple[str, dict[str, Any]]]:
    return [("ExpectColumnValuesToBeBetween", {"column": c, "min_value": 0}) for c in cols]


LANDING: list[Check] = [
    Check(
        "raw_files",
        """select *, lines_total - lines_parsed - lines_noise - lines_quarantined as unaccounted_lines
           from raw.files""",
        [
            ("ExpectColumnValuesToBeUnique", {"column": "file_id"}),
            ("ExpectColumnValuesToNotBeNull", {"column": "status"}),
            (
                "ExpectColumnValuesToBeInSet",
                {"column": "status", "value_set": ["loaded", "empty", "error", "unsupported", "unknown"]},
            ),
            # every line of a loaded file is parsed, noise or quarantined
            (
                "ExpectColumnValuesToBeBetween",
                {"column": "unaccounted_lines", "min_value": 0, "max_value": 0},
            ),
        ],
        per_run="file_id",
    ),
    # nothing lost, proven from the landed rows: per loaded file, the distinct line numbers
    # across every landing table, raw.noise and raw.quarantine are exactly 1..lines_total
    Check(
        "raw_line_accounting",
        landed_lines_sql("{files}"),
        [
            ("ExpectColumnValuesToBeBetween", {"column": "lost_lines", "min_value": 0, "max_value": 0}),
            ("ExpectColumnValuesToBeBetween", {"column": "lines_beyond_end", "min_value": 0, "max_value": 0}),
        ],
        per_run="file_id",
    ),
    Check(
        "raw_runs",
        "select * from raw.runs",
        [
            ("ExpectColumnValuesToBeUnique", {"column": "run_id"}),
            ("ExpectColumnValuesToNotBeNull", {"column": "run_id"}),
        ],
    ),
    # a run's own offset: judged per run, so a run.toml's bad timezone holds back that run only
    Check(
        "raw_runs_offsets",
        "select run_id, utc_offset_minutes from raw.runs",
        [
            (
                "ExpectColumnValuesToBeBetween",
                {"column": "utc_offset_minutes", "min_value": -720, "max_value": 840},
            ),
        ],
        per_run="run_id",
    ),
    Check(
        "raw_postal_rows",
        "select * from raw.postal_rows",
        [
            *_nonneg("messages", "data_kb", "errors", "connections"),
            ("ExpectColumnValuesToBeBetween", {"column": "clock_minute", "min_value": 0, "max_value": 1439}),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["file_id", "segment", "row_seq"]}),
        ],
        per_run="file_id",
    ),
]

MARTS: list[Check] = [
    Check(
        "runs",
        "select * from main.runs",
        [
            ("ExpectColumnValuesToBeUnique", {"column": "run_id"}),
            ("ExpectColumnValuesToBeInSet", {"column": "status", "value_set": ["ok", "failed", "partial"]}),
            *_nonneg("total_messages", "total_errors", "total_kb", "total_connections", "minutes"),
            ("ExpectColumnValuesToBeBetween", {"column": "error_rate", "min_value": 0, "max_value": 1}),
            (
                "ExpectColumnPairValuesAToBeGreaterThanB",
                {
                    "column_A": "peak_msgs_per_min",
                    "column_B": "sustained_msgs_per_min",
                    "or_equal": True,
                    "ignore_row_if": "either_value_is_missing",
                },
            ),
            (
                "ExpectColumnPairValuesAToBeGreaterThanB",
                {
                    "column_A": "sustained_msgs_per_min",
                    "column_B": "p10_msgs_per_min",
                    "or_equal": True,
                    "ignore_row_if": "either_value_is_missing",
                },
            ),
            # the mailbox side (POP3/IMAP server log, rabid's rows)
            *_nonneg(*MAILBOX_COUNTS, "mailbox_full_minutes", "sustained_retrievals_per_min", *RABID_COUNTS),
            ("ExpectColumnValuesToNotBeNull", {"column": "mailbox_full_minutes"}),
            (
                "ExpectColumnPairValuesAToBeGreaterThanB",
                {
                    "column_A": "peak_retrievals_per_min",
                    "column_B": "sustained_retrievals_per_min",
                    "or_equal": True,
                    "ignore_row_if": "either_value_is_missing",
                },
            ),
            # a zero-byte session is a session; so is every POP3 or IMAP one
            (
                "ExpectColumnPairValuesAToBeGreaterThanB",
                {
                    "column_A": "mailbox_sessions",
                    "column_B": "zero_byte_sessions",
                    "or_equal": True,
                    "ignore_row_if": "either_value_is_missing",
                },
            ),
        ],
        per_run="run_id",
    ),
    Check(
        "minutes",
        # negative offsets are monitor minutes before the load started (no load row);
        # pop3 + imap sessions never exceed the sessions (the Mailbox side dashboard charts both)
        """select *, case when has_load_row then minute_offset end as load_minute_offset,
                  mailbox_sessions - coalesce(pop3_sessions, 0) - coalesce(imap_sessions, 0)
                      as other_service_sessions
           from main.minutes""",
        [
            *_nonneg("messages", "data_kb", "errors", "connections", "load_minute_offset"),
            # samplers start seconds before the load: minutes far before it mean the files'
            # dates disagree with the load's (e.g. an unreadable run.toml, dates from file times)
            (
                "ExpectColumnValuesToBeBetween",
                {"column": "minute_offset", "min_value": -MAX_MONITOR_LEAD_MINUTES},
            ),
            *_nonneg(*MAILBOX_COUNTS, *RABID_COUNTS, "other_service_sessions"),
            # the SMTP side the Mailbox side dashboard charts against POP/IMAP out
            *_nonneg("received", "delivered"),
            ("ExpectColumnValuesToNotBeNull", {"column": "has_rabid_row"}),
            (
                "ExpectColumnPairValuesAToBeGreaterThanB",
                {
                    "column_A": "mailbox_sessions",
                    "column_B": "zero_byte_sessions",
                    "or_equal": True,
                    "ignore_row_if": "either_value_is_missing",
                },
            ),
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["run_id", "minute_offset"]}),
            ("ExpectColumnValuesToNotBeNull", {"column": "minute_at"}),
        ],
        per_run="run_id",
    ),
    Check(
        "events",
        "select * from main.events",
        [
            ("ExpectColumnValuesToNotBeNull", {"column": "run_id"}),
            ("ExpectColumnValuesToNotBeNull", {"column": "kind"}),
            ("ExpectColumnValuesToNotBeNull", {"column": "line_no"}),
            ("ExpectColumnValuesToBeBetween", {"column": "smtp_code", "min_value": 200, "max_value": 599}),
        ],
        per_run="run_id",
    ),
    Check(
        "daily_capacity",
        """select *,
                  peak_msgs_per_day - peak_msgs_per_min * minutes_per_day as peak_day_residual,
                  sustained_msgs_per_day - sustained_msgs_per_min * minutes_per_day as sustained_day_residual,
                  p10_msgs_per_day - p10_msgs_per_min * minutes_per_day as p10_day_residual,
                  sustained_retrievals_per_day - sustained_retrievals_per_min * minutes_per_day
                      as retrievals_day_residual,
                  case when mean_msgs_per_min not between mean_ci_low_msgs_per_min
                      and mean_ci_high_msgs_per_min then 1 else 0 end as mean_outside_ci,
                  case when sustained_msgs_per_min not between median_ci_low_msgs_per_min
                      and median_ci_high_msgs_per_min then 1 else 0 end as median_outside_ci
           from main.daily_capacity""",
        [
            (
                "ExpectColumnValuesToBeBetween",
                {"column": "minutes_per_day", "min_value": 1440, "max_value": 1440},
            ),
            # daily figures are whole messages: within half a message of rate x minutes per day
            *[
                ("ExpectColumnValuesToBeBetween", {"column": c, "min_value": -0.5, "max_value": 0.5})
                for c in ("peak_day_residual", "sustained_day_residual", "p10_day_residual")
            ],
            *_nonneg("sustained_msgs_per_day", "sustained_retrievals_per_day", "peak_retrievals_per_day"),
            (
                "ExpectColumnValuesToBeBetween",
                {"column": "retrievals_day_residual", "min_value": -0.5, "max_value": 0.5},
            ),
            (
                "ExpectColumnValuesToBeInSet",
                {"column": "capacity_status", "value_set": ["ok", "short", "partial"]},
            ),
            ("ExpectColumnValuesToNotBeNull", {"column": "capacity_basis"}),
            (
                "ExpectColumnValuesToBeInSet",
                {"column": "bound_by", "value_set": ["generator", "mta_saturation", "errors", "none"]},
            ),
            ("ExpectColumnValuesToNotBeNull", {"column": "bound_evidence"}),
            # each interval brackets its estimate
            *[
                ("ExpectColumnValuesToBeBetween", {"column": c, "min_value": 0, "max_value": 0})
                for c in ("mean_outside_ci", "median_outside_ci")
            ],
        ],
        per_run="run_id",
    ),
    Check(
        "saturation_events",
        """select *,
                  abs(drop_pct - 100 * (1 - level_after / level_before)) as drop_residual,
                  score - score_threshold as score_margin
           from main.saturation_events""",
        [
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["run_id", "event_no"]}),
            ("ExpectColumnValuesToNotBeNull", {"column": "start_minute_at"}),
            # the method's own guards: a drop, a score over its threshold, at least 2 minutes
            ("ExpectColumnValuesToBeBetween", {"column": "drop_pct", "min_value": 0, "max_value": 100}),
            ("ExpectColumnValuesToBeBetween", {"column": "score_margin", "min_value": 0}),
            ("ExpectColumnValuesToBeBetween", {"column": "duration_minutes", "min_value": 2}),
            ("ExpectColumnValuesToBeBetween", {"column": "drop_residual", "min_value": 0, "max_value": 1e-9}),
            *_nonneg("level_after", "smtp_errors", "start_minute_offset"),
            ("ExpectColumnValuesToBeBetween", {"column": "cpu_busy_pct", "min_value": 0, "max_value": 100}),
        ],
        per_run="run_id",
    ),
    Check(
        "error_bursts",
        "select *, end_offset - start_offset + 1 - minutes as gap_minutes from main.error_bursts",
        [
            *_nonneg("errors", "peak_errors_per_min"),
            # a burst is consecutive error minutes: its span equals its minute count
            ("ExpectColumnValuesToBeBetween", {"column": "gap_minutes", "min_value": 0, "max_value": 0}),
        ],
        per_run="run_id",
    ),
]

MARTS += [
    Check(
        "system_minutes",
        "select * from main.system_minutes",
        [
            *[
                ("ExpectColumnValuesToBeBetween", {"column": c, "min_value": 0, "max_value": 100})
                for c in ("cpu_user", "cpu_system", "cpu_idle", "cpu_iowait", "cpu_steal", "disk_util_pct")
            ],
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["run_id", "minute_at"]}),
        ],
        per_run="run_id",
    ),
    Check(
        "comparisons",
        # one row per pair; every level's verdict must agree with its margin, and the levels nest
        f"""select set_kind, baseline, candidate, n1, n2,
                  {", ".join(f"margin_{s}" for s in LEVELS)},
                  case when {VERDICTS_MATCH} then 0 else 1 end as verdict_mismatch,
                  case when {LEVELS_NEST} then 0 else 1 end as levels_not_nested
           from main.comparisons""",
        [
            ("ExpectColumnValuesToBeBetween", {"column": "n1", "min_value": 2}),
            ("ExpectColumnValuesToBeBetween", {"column": "n2", "min_value": 2}),
            *[("ExpectColumnValuesToBeBetween", {"column": f"margin_{s}", "min_value": 0}) for s in LEVELS],
            *[
                ("ExpectColumnValuesToBeBetween", {"column": c, "min_value": 0, "max_value": 0})
                for c in ("verdict_mismatch", "levels_not_nested")
            ],
            ("ExpectCompoundColumnsToBeUnique", {"column_list": ["set_kind", "baseline", "candidate"]}),
        ],
    ),
]

MARTS += [
    Check(
        "messages",
        "select * from main.messages",
        [
            (
                "ExpectCompoundColumnsToBeUnique",
                {"column_list": ["run_id", "queue_id", "message_instance"]},
            ),
            (
                "ExpectColumnValuesToBeInSet",
                {
                    "column": "final_status",
                    # verify(8) probes end deliverable / undeliverable(-but-not-cached), never
                    # sent; a message a header or body check refused ends rejected, one the
                    # administrator deleted from the queue removed, one an access map's DISCARD
                    # dropped discarded
                    "value_set": [
                        "sent",
                        "deferred",
                        "bounced",
                        "expired",
                        "rejected",
                        "removed",
                        "discarded",
                        "queued",
                        "deliverable",
                        "undeliverable",
                        "undeliverable-but-not-cached",
                    ],
                },
            ),
            *_nonneg(
                "delay",
                "delay_before_qmgr",
                "delay_in_qmgr",
                "delay_conn_setup",
                "delay_transmission",
                "size",
            ),
        ],
        per_run="run_id",
    ),
    Check(
        "runs_mail",
        """select *, delivered_incl_drain - delivered as drain_deliveries from main.runs
           where received is not null""",
        [
            *_nonneg(
                "received",
                "delivered",
                "deferred",
                "bounced",
                "rejected",
                "drain_deliveries",
                "time_to_inject_s",
                "queue_growth_per_min",
            ),
        ],
        per_run="run_id",
    ),
]

SUITES: dict[str, list[Check]] = {"landing": LANDING, "marts": MARTS}
