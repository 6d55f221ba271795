"""raw.maillog_messages: one landed maillog file's messages, computed once per file version.

A message is a queue id and its instance (Postfix reuses queue ids): the columns of the
`messages` mart, per file instead of per run. Aggregating 70 M maillog lines into 10 M
messages was ~194 s of a full dbt build at 236x the samples (issue 18, "Scale"); as the
file lands it costs ~25 ms per sample maillog, once per file version, and the build reads
these rows instead. The `messages` model takes a run's messages from here when the run
has exactly one maillog file and that file has this part; other runs (a maillog beside
its drain log: a queue id's lines span both) keep the line path, whose SQL
(models/marts/messages.sql, models/intermediate/int_maillog__lines.sql) defines the same
columns. `tests/test_maillog_messages.py` builds the mart both ways and compares them.

The rows go to one Parquet part per file (maillog_derived.land); raw.parquet_files.rows
holds each part's messages (the model finds a run's files with messages without opening
the parts).
"""

from __future__ import annotations

from ingest import maillog_derived

TABLE = "maillog_messages"

# the columns of the `messages` mart, less run_id; first_line_no is the message's first
# line in the file (provenance)
COLUMNS = (
    "file_id BIGINT NOT NULL, first_line_no INTEGER, queue_id VARCHAR, message_instance BIGINT, "
    "received_at TIMESTAMP, client VARCHAR, message_id VARCHAR, sender VARCHAR, size BIGINT, "
    "nrcpt INTEGER, first_delivery_at TIMESTAMP, last_delivery_at TIMESTAMP, "
    "delivered_recipients BIGINT, deferrals BIGINT, bounced_recipients BIGINT, final_status VARCHAR, "
    "delay DOUBLE, delay_before_qmgr DOUBLE, delay_in_qmgr DOUBLE, delay_conn_setup DOUBLE, "
    "delay_transmission DOUBLE, relay VARCHAR, dsn VARCHAR, relay_host VARCHAR"
)

_HEADER = "kind in ('message_id', 'qmgr_from', 'from', 'arrival')"
_DELIVERY = "(kind = 'delivery' or is_expired)"

# messages.sql's aggregates over one message's lines; the last delivery line is the latest
# by (logged_at, line_no), a line without a time the earliest
_AGGREGATES = f"""
        min(line_no) as first_line_no,
        count(*) filter (where is_received or {_HEADER} or {_DELIVERY}) > 0 as has_lines,
        min(logged_at) filter (where is_received) as received_at,
        max(client) filter (where is_received) as client,
        max(message_id) filter (where {_HEADER}) as message_id,
        max(sender) filter (where {_HEADER}) as sender,
        max(size) filter (where {_HEADER}) as size,
        max(nrcpt) filter (where {_HEADER}) as nrcpt,
        min(logged_at) filter (where {_DELIVERY}) as first_delivery_at,
        max(logged_at) filter (where {_DELIVERY}) as last_delivery_at,
        count(*) filter (where is_delivered) as delivered_recipients,
        count(*) filter (where is_deferral) as deferrals,
        count(*) filter (where is_bounced) as bounced_recipients,
        max_by(
            struct_pack(is_expired, status, delay, delay_before_qmgr, delay_in_qmgr,
                delay_conn_setup, delay_transmission, relay, dsn, relay_host),
            struct_pack(timed := logged_at is not null, logged_at, line_no)
        ) filter (where {_DELIVERY}) as last_delivery"""

_OUTPUT = """
    queue_id, message_instance, first_line_no, received_at, client, message_id, sender, size,
    nrcpt, first_delivery_at, last_delivery_at, delivered_recipients, deferrals,
    bounced_recipients, last_delivery"""


def messages_sql(parts: list[str], file_id: int) -> str:
    """The file's messages from its maillog parts (as messages.sql computes a run's)."""
    return f"""
with

queue_lines as (
    select *
    from ({maillog_derived.classified_lines(parts)})
    where queue_id is not null
),

-- per queue id its message, when it holds one (no `removed` line, or one that is its last)
queue_ids as (
    select
        queue_id,
        count(logged_at) = count(*)
            and (
                count(*) filter (where kind = 'removed') = 0
                or (
                    count(*) filter (where kind = 'removed') = 1
                    and max_by(coalesce(kind = 'removed', false), struct_pack(logged_at, line_no))
                )
            ) as is_one_message,
        {_AGGREGATES}
    from queue_lines
    group by queue_id
),

-- a reused id's lines, numbered: an instance ends with its `removed` line
numbered_lines as (
    select
        queue_lines.*,
        1 + coalesce(
            count(case when kind = 'removed' then 1 end) over (
                partition by queue_lines.queue_id
                order by logged_at, line_no
                rows between unbounded preceding and 1 preceding
            ),
            0
        ) as message_instance
    from queue_lines
    semi join (select queue_id from queue_ids where not is_one_message) as reused
        on queue_lines.queue_id = reused.queue_id
),

messages as (
    select cast(1 as bigint) as message_instance, *
    from queue_ids
    where is_one_message and has_lines
    union all by name
    select *
    from (
        select queue_id, message_instance, {_AGGREGATES}
        from numbered_lines
        group by queue_id, message_instance
    )
    where has_lines
)

select
    {int(file_id)} as file_id,
    first_line_no,
    queue_id,
    message_instance,
    received_at,
    client,
    message_id,
    sender,
    size,
    nrcpt,
    first_delivery_at,
    last_delivery_at,
    delivered_recipients,
    deferrals,
    bounced_recipients,
    case
        when last_delivery.is_expired then 'expired'
        when last_delivery.status is not null then last_delivery.status
        else 'queued'
    end as final_status,
    last_delivery.delay,
    last_delivery.delay_before_qmgr,
    last_delivery.delay_in_qmgr,
    last_delivery.delay_conn_setup,
    last_delivery.delay_transmission,
    last_delivery.relay,
    last_delivery.dsn,
    last_delivery.relay_host
from messages
"""


def land(con, file_id: int, view: bool = True) -> int:
    """Write the file's messages part from its landed maillog parts (in the caller's
    transaction); returns the messages written."""
    return maillog_derived.land(
        con,
        file_id,
        TABLE,
        COLUMNS,
        lambda parts: messages_sql(parts, file_id),
        "first_line_no, message_instance",
        view,
    )
