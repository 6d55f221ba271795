{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}

-- One row per message per run: when the MTA received it, who sent it, and how its deliveries
-- ended. A message is a queue id and its `message_instance` (Postfix reuses queue ids).
-- Delay figures come from the last delivery line (Postfix `delays=a/b/c/d`: before the
-- queue manager / in the queue manager / connection setup / transmission).
--
-- Postfix reuses short queue ids: one id can name several messages in a run. An instance is
-- the queue id from its first line (smtpd/postscreen `client=`, pickup, cleanup) up to and
-- including its `removed` line; the next line with that id starts the next instance.
-- Reuse is rare (6 of 20,000 ids in e-smtp-source-s5), so only ids with a line after their
-- first `removed` go through the numbering window; every message is then one hash aggregate,
-- no sort of the lines (issue 18, "Scale": the window over every queue-id line spilled 19 GB
-- at 236x the samples under the 1GB memory limit).

{# a line's place in the run: time, then file and line (lines without a time last) #}
{% set place %}
    {{ struct_of([
        ('no_time', 'logged_at is null'),
        ('t', "coalesce(logged_at, cast('1970-01-01' as timestamp))"),
        ('f', 'file_id'),
        ('l', 'line_no'),
    ]) }}
{% endset %}
{% set files_filter = per_run_files_only('file_id') %}
{# the lines, written out in each branch below rather than a CTE: DuckDB materializes a CTE
    read more than once, and this one is every queue-id line (16 GB spilled at 236x) #}
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
        kind in ('message_id', 'qmgr_from', 'from', 'arrival') as is_header,
        kind = 'delivery' or is_expired as is_delivery_line,
        {{ place }} as place
    from {{ ref('int_maillog__lines') }}
    where queue_id is not null
        and {{ files_filter }}
{% endset %}

with

-- ids with a line after their first `removed`: more than one message
reused_ids as (
    select
        run_id,
        queue_id
    from {{ ref('int_maillog__lines') }}
    where queue_id is not null
        and {{ files_filter }}
    group by run_id, queue_id
    having max({{ place }}) > min(case when kind = 'removed' then {{ place }} end)
),

numbered as (
    select
        queue_lines.*,
        1 as message_instance
    from ({{ queue_lines }}) as queue_lines
    left join reused_ids
        on queue_lines.run_id = reused_ids.run_id
        and queue_lines.queue_id = reused_ids.queue_id
    where reused_ids.queue_id is null

    union all

    select
        queue_lines.*,
        1 + coalesce(
            count(case when queue_lines.kind = 'removed' then 1 end) over (
                partition by queue_lines.run_id, queue_lines.queue_id
                order by queue_lines.place
                rows between unbounded preceding and 1 preceding
            ),
            0
        ) as message_instance
    from ({{ queue_lines }}) as queue_lines
    inner join reused_ids
        on queue_lines.run_id = reused_ids.run_id
        and queue_lines.queue_id = reused_ids.queue_id
),

aggregated as (
    select
        run_id,
        queue_id,
        message_instance,
        min(case when is_received then logged_at end) as received_at,
        max(case when is_received then client end) as client,
        max(case when is_header then message_id end) as message_id,
        max(case when is_header then sender end) as sender,
        max(case when is_header then size end) as size,
        max(case when is_header then nrcpt end) as nrcpt,
        min(case when is_delivery_line then logged_at end) as first_delivery_at,
        max(case when is_delivery_line then logged_at end) as last_delivery_at,
        count(case when is_delivery_line and is_delivered then 1 end) as delivered_recipients,
        count(case when is_delivery_line and is_deferral then 1 end) as deferrals,
        count(case when is_delivery_line and is_bounced then 1 end) as bounced_recipients,
        -- the last delivery line: latest time, then the first file, then the last line
        {{ arg_max(
            'case when is_delivery_line then ' ~ struct_of([
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
            ]) ~ ' end',
            'case when is_delivery_line then ' ~ struct_of([
                ('has_time', 'logged_at is not null'),
                ('t', "coalesce(logged_at, cast('1970-01-01' as timestamp))"),
                ('f', '-1 - file_id'),
                ('l', 'line_no'),
            ]) ~ ' end'
        ) }} as last_delivery
    from numbered
    group by run_id, queue_id, message_instance
    -- a message is what has a received, header or delivery line (not a lone `removed`)
    having count(case when is_received or is_header or is_delivery_line then 1 end) > 0
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
    from aggregated
)

select * from final
