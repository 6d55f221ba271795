{{ config(**per_run_config(batch_lines=var('per_run_batch_lines'))) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}, {{ ref('stg_raw__files') }}

-- One row per message per run: when the MTA received it, who sent it, and how its deliveries
-- ended. A message is a queue id and its `message_instance` (Postfix reuses queue ids).
-- Delay figures come from the last delivery line (Postfix `delays=a/b/c/d`: before the
-- queue manager / in the queue manager / connection setup / transmission).
--
-- Postfix reuses short queue ids: one id can name several messages in a run. An instance is
-- the queue id from its first line (smtpd/postscreen `client=`, pickup, cleanup) up to and
-- including its `removed` line; the next line with that id starts the next instance. The
-- numbering window sorts only the columns used below, not whole lines (issue 18, "Scale").
-- Built in batches of runs of at most `per_run_batch_lines` lines, each its own statement
-- (macros/per_run.sql, per_run_files_batch): the window over all of a big archive's lines spills.

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
        and {{ per_run_files_batch('file_id', var('per_run_batch_lines')) }}
),

lines as (
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
    from queue_lines
),

received as (
    select
        run_id,
        queue_id,
        message_instance,
        min(logged_at) as received_at,
        max(client) as client
    from lines
    where is_received
    group by run_id, queue_id, message_instance
),

headers as (
    select
        run_id,
        queue_id,
        message_instance,
        max(message_id) as message_id,
        max(sender) as sender,
        max(size) as size,
        max(nrcpt) as nrcpt
    from lines
    where kind in ('message_id', 'qmgr_from', 'from', 'arrival')
    group by run_id, queue_id, message_instance
),

deliveries as (
    select
        *,
        row_number() over (
            partition by run_id, queue_id, message_instance
            order by logged_at desc, file_id, line_no desc
        ) as recency
    from lines
    where kind = 'delivery' or is_expired
),

delivery_span as (
    select
        run_id,
        queue_id,
        message_instance,
        min(logged_at) as first_delivery_at,
        max(logged_at) as last_delivery_at,
        count(case when is_delivered then 1 end) as delivered_recipients,
        count(case when is_deferral then 1 end) as deferrals,
        count(case when is_bounced then 1 end) as bounced_recipients
    from deliveries
    group by run_id, queue_id, message_instance
),

keys as (
    select run_id, queue_id, message_instance from received
    union
    select run_id, queue_id, message_instance from headers
    union
    select run_id, queue_id, message_instance from deliveries
),

final as (
    select
        keys.run_id,
        keys.queue_id,
        keys.message_instance,
        received.received_at,
        received.client,
        headers.message_id,
        headers.sender,
        headers.size,
        headers.nrcpt,
        delivery_span.first_delivery_at,
        delivery_span.last_delivery_at,
        coalesce(delivery_span.delivered_recipients, 0) as delivered_recipients,
        coalesce(delivery_span.deferrals, 0) as deferrals,
        coalesce(delivery_span.bounced_recipients, 0) as bounced_recipients,
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
    from keys
    left join received
        on keys.run_id = received.run_id
        and keys.queue_id = received.queue_id
        and keys.message_instance = received.message_instance
    left join headers
        on keys.run_id = headers.run_id
        and keys.queue_id = headers.queue_id
        and keys.message_instance = headers.message_instance
    left join delivery_span
        on keys.run_id = delivery_span.run_id
        and keys.queue_id = delivery_span.queue_id
        and keys.message_instance = delivery_span.message_instance
    left join deliveries as last_delivery
        on keys.run_id = last_delivery.run_id
        and keys.queue_id = last_delivery.queue_id
        and keys.message_instance = last_delivery.message_instance
        and last_delivery.recency = 1
)

select * from final
