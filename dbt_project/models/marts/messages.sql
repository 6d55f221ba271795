{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}

-- One row per message per run: when the MTA received it, who sent it, and how its deliveries
-- ended. A message is a queue id and its `message_instance` (Postfix reuses queue ids).
-- Delay figures come from the last delivery line (Postfix `delays=a/b/c/d`: before the
-- queue manager / in the queue manager / connection setup / transmission).
--
-- An instance is the queue id from its first line (smtpd/postscreen `client=`, pickup,
-- cleanup) up to and including its `removed` line; the next line with that id starts the
-- next instance. Almost every id names one message: those are aggregated in one pass by
-- (run, queue id). Only the few ids `int_maillog__reused_queue_ids` lists have their lines
-- numbered by a window first. Numbering every line with the window sorted 57 M lines and
-- took 545 s at 236x the samples (issue 18, "Scale"). The last delivery is one max() over a
-- struct led by its sort key (latest time, then lowest file id, then highest line number).
-- Both CTE-free scans are written out (jinja `set`): DuckDB materializes a CTE read twice.

{% set header_kinds = "('message_id', 'qmgr_from', 'from', 'arrival')" %}

{% set queue_lines %}
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
        is_expired,
        kind = 'delivery' or is_expired as is_delivery_line
    from {{ ref('int_maillog__lines') }}
    where queue_id is not null
        and {{ per_run_files_only('file_id') }}
{% endset %}

{% set message_aggregates %}
        min(case when is_received then logged_at end) as received_at,
        max(case when is_received then client end) as client,
        max(case when kind in {{ header_kinds }} then message_id end) as message_id,
        max(case when kind in {{ header_kinds }} then sender end) as sender,
        max(case when kind in {{ header_kinds }} then size end) as size,
        max(case when kind in {{ header_kinds }} then nrcpt end) as nrcpt,
        min(case when is_delivery_line then logged_at end) as first_delivery_at,
        max(case when is_delivery_line then logged_at end) as last_delivery_at,
        count(case when is_delivered then 1 end) as delivered_recipients,
        count(case when is_deferral then 1 end) as deferrals,
        count(case when is_bounced then 1 end) as bounced_recipients,
        max(case when is_delivery_line then {{ named_struct([
            ('sort_at', "coalesce(logged_at, cast('0001-01-01 00:00:00' as timestamp))"),
            ('sort_file', '-file_id'),
            ('sort_line', 'line_no'),
            ('is_expired', 'is_expired'),
            ('status', 'status'),
            ('delay', 'delay'),
            ('delay_before_qmgr', 'delay_before_qmgr'),
            ('delay_in_qmgr', 'delay_in_qmgr'),
            ('delay_conn_setup', 'delay_conn_setup'),
            ('delay_transmission', 'delay_transmission'),
            ('relay', 'relay'),
            ('dsn', 'dsn'),
            ('relay_host', 'relay_host'),
        ]) }} end) as last_delivery,
        count(case when is_received or kind in {{ header_kinds }} or is_delivery_line then 1 end)
            as message_lines
{% endset %}

with

reused_ids as (
    select run_id, queue_id from {{ ref('int_maillog__reused_queue_ids') }}
),

-- every queue id as one message; the reused ids' rows are dropped below
single_instance as (
    select
        run_id,
        queue_id,
        cast(1 as bigint) as message_instance,
        {{ message_aggregates }}
    from ({{ queue_lines }}) as queue_lines
    group by run_id, queue_id
),

reused_lines as (
    select
        queue_lines.*,
        1 + coalesce(
            count(case when queue_lines.kind = 'removed' then 1 end) over (
                partition by queue_lines.run_id, queue_lines.queue_id
                order by queue_lines.logged_at, queue_lines.file_id, queue_lines.line_no
                rows between unbounded preceding and 1 preceding
            ),
            0
        ) as message_instance
    from ({{ queue_lines }}) as queue_lines
    inner join reused_ids
        on queue_lines.run_id = reused_ids.run_id
        and queue_lines.queue_id = reused_ids.queue_id
),

reused_instances as (
    select
        run_id,
        queue_id,
        message_instance,
        {{ message_aggregates }}
    from reused_lines
    group by run_id, queue_id, message_instance
),

instances as (
    select single_instance.*
    from single_instance
    left join reused_ids
        on single_instance.run_id = reused_ids.run_id
        and single_instance.queue_id = reused_ids.queue_id
    where reused_ids.queue_id is null
    union all
    select * from reused_instances
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
        last_delivery.delay as delay,
        last_delivery.delay_before_qmgr as delay_before_qmgr,
        last_delivery.delay_in_qmgr as delay_in_qmgr,
        last_delivery.delay_conn_setup as delay_conn_setup,
        last_delivery.delay_transmission as delay_transmission,
        last_delivery.relay as relay,
        last_delivery.dsn as dsn,
        last_delivery.relay_host as relay_host
    from instances
    -- a queue id seen only in lines that are not the message's (e.g. a lone `removed`)
    where message_lines > 0
)

select * from final
