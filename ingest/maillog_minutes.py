"""raw.maillog_minutes: one landed maillog file's counts per minute, computed once as the file
lands (ingest/maillog_derived.py).

int_maillog__minutes counts, per run and minute, the received, delivered, deferred, bounced
and rejected lines (pflogsumm's definitions). The counts add up across a run's files, so
each file's counts per minute are final once it has landed: the model sums them per run instead
of grouping every line of the archive (33 s of a full build at 236x the samples, issue 18,
"Scale"). `lines` counts the file's time-stamped lines in the minute: a minute with lines
but nothing counted is still a minute of the run's maillog.
"""

from __future__ import annotations

from ingest import maillog_derived

TABLE = "maillog_minutes"

COLUMNS = (
    "file_id BIGINT NOT NULL, minute_at TIMESTAMP, lines BIGINT, received BIGINT, delivered BIGINT, "
    "deferred BIGINT, bounced BIGINT, rejected BIGINT"
)


def minutes_sql(parts: list[str], file_id: int) -> str:
    """The file's counts per minute (int_maillog__minutes' counts, per file)."""
    return f"""
    select
        {int(file_id)} as file_id,
        date_trunc('minute', logged_at) as minute_at,
        count(*) as lines,
        count(case when is_received then 1 end) as received,
        count(case when is_delivered then 1 end) as delivered,
        count(case when is_deferral then 1 end) as deferred,
        count(case when is_bounced then 1 end) as bounced,
        count(case when is_rejected then 1 end) as rejected
    from ({maillog_derived.classified_lines(parts)})
    where logged_at is not null
    group by minute_at"""


def land(con, file_id: int, view: bool = True) -> int:
    """Write the file's minutes part (in the caller's transaction); returns its minutes."""
    return maillog_derived.land(
        con, file_id, TABLE, COLUMNS, lambda parts: minutes_sql(parts, file_id), "minute_at", view
    )
