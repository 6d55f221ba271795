{{ config(**per_run_config(batch_lines=var('per_run_batch_lines'), batch_files='maillog_line_path_files')) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}, {{ ref('stg_raw__files') }}

-- The `messages` of the runs whose messages are not landed (macros/maillog.sql,
-- maillog_line_path_files): a run whose queue ids span files (its maillog and drain log), a
-- file whose derive step did not run, every run on the Parquet landing and on Spark. From the
-- lines, with the definitions ingest/maillog_messages.py applies to each landed file.
--
-- A message is a queue id and its `message_instance` (Postfix reuses queue ids). Delay
-- figures come from the last delivery line (Postfix `delays=a/b/c/d`: before the queue
-- manager / in the queue manager / connection setup / transmission).
--
-- Postfix reuses short queue ids: one id can name several messages in a run. An instance is
-- the queue id from its first line (smtpd/postscreen `client=`, pickup, cleanup) up to and
-- including its `removed` line; the next line with that id starts the next instance.
-- Almost every queue id holds one message (no `removed` line, or one that is its last line):
-- those take one group-by over (run_id, queue_id). Only the lines of the other ids (reused
-- ids: 30 of 231,234 in a 236x batch) are sorted by the numbering window, then grouped by
-- instance with the same aggregates. A window over every line, four aggregates and four joins took
-- a 236x batch 3.8 s against 2.4 s (with ~0.9 s of reading the lines; issue 18, "Scale").
-- Built in batches of runs of at most `per_run_batch_lines` lines, each its own statement
-- (macros/per_run.sql, per_run_files_batch): one statement over all of a big archive's lines
-- spills. The batches hold only the files whose messages come from their lines.

{% set header_kinds = "kind in ('message_id', 'qmgr_from', 'from', 'arrival')" %}
{% set delivery_line = "(kind = 'delivery' or is_expired)" %}
{#- a message's columns from its lines (is_delivered, is_deferral, is_bounced are delivery lines);
    its last delivery line is the latest by (logged_at, then the lowest file_id, then the
    highest line_no), a line without a time the earliest (as `order by logged_at desc` puts it) -#}
{% set message_aggregates -%}
        count(*) filter (where is_received or {{ header_kinds }} or {{ delivery_line }}) > 0 as has_lines,
        min(logged_at) filter (where is_received) as received_at,
        max(client) filter (where is_received) as client,
        max(message_id) filter (where {{ header_kinds }}) as message_id,
        max(sender) filter (where {{ header_kinds }}) as sender,
        max(size) filter (where {{ header_kinds }}) as size,
        max(nrcpt) filter (where {{ header_kinds }}) as nrcpt,
        min(logged_at) filter (where {{ delivery_line }}) as first_delivery_at,
        max(logged_at) filter (where {{ delivery_line }}) as last_delivery_at,
        count(*) filter (where is_delivered) as delivered_recipients,
        count(*) filter (where is_deferral) as deferrals,
        count(*) filter (where is_bounced) as bounced_recipients,
        max_by(
            {{ struct_of(['is_expired', 'status', 'delay', 'delay_before_qmgr', 'delay_in_qmgr',
                'delay_conn_setup', 'delay_transmission', 'relay', 'dsn', 'relay_host']) }},
            {{ struct_of({'timed': 'logged_at is not null', 'logged_at': 'logged_at',
                'file_rank': '-file_id', 'line_no': 'line_no'}) }}
        ) filter (where {{ delivery_line }}) as last_delivery
{%- endset %}

with

queue_lines as (
    select
        run_id,
        queue_id,
        file_id,
        line_no,
        logged_at,
        kind,
        client,
        message_id,
        sender,
        size,
        nrcpt,
        status,
        delay,
        delay_before_qmgr,
        delay_in_qmgr,
        delay_conn_setup,
        delay_transmission,
        relay,
        dsn,
        relay_host,
        is_received,
        is_delivered,
        is_deferral,
        is_bounced,
        is_expired
    from {{ ref('int_maillog__lines') }}
    where queue_id is not null
        and {{ per_run_files_batch('file_id', var('per_run_batch_lines'), 'maillog_line_path_files') }}
),

-- per queue id: its message columns, right when it holds one message. A line without a time
-- sends the id to the window (which sorts it last on DuckDB, first on Spark).
queue_ids as (
    select
        run_id,
        queue_id,
        count(logged_at) = count(*)
            and (
                count(*) filter (where kind = 'removed') = 0
                or (
                    count(*) filter (where kind = 'removed') = 1
                    and max_by(
                        coalesce(kind = 'removed', false),
                        {{ struct_of(['logged_at', 'file_id', 'line_no']) }}
                    )
                )
            ) as is_one_message,
        {{ message_aggregates }}
    from queue_lines
    group by run_id, queue_id
),

reused_lines as (
    select queue_lines.*
    from queue_lines
    inner join queue_ids
        on queue_lines.run_id = queue_ids.run_id
        and queue_lines.queue_id = queue_ids.queue_id
    where not queue_ids.is_one_message
),

numbered_lines as (
    select
        *,
        1 + coalesce(
            count(case when kind = 'removed' then 1 end) over (
                partition by run_id, queue_id
                order by logged_at, file_id, line_no
                rows between unbounded preceding and 1 preceding
            ),
            0
        ) as message_instance
    from reused_lines
),

reused_messages as (
    select
        run_id,
        queue_id,
        message_instance,
        {{ message_aggregates }}
    from numbered_lines
    group by run_id, queue_id, message_instance
),

-- a message needs a received, header or delivery line
messages as (
    select
        run_id,
        queue_id,
        cast(1 as bigint) as message_instance,
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
        last_delivery
    from queue_ids
    where is_one_message and has_lines
    union all
    select
        run_id,
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
        last_delivery
    from reused_messages
    where has_lines
),


final as (
    select
        run_id,
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
)

select * from final
