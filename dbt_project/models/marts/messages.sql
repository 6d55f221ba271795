{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}, {{ ref('stg_raw__files') }}, {{ ref('stg_maillog__messages') }}

-- One row per message per run: when the MTA received it, who sent it, and how its deliveries
-- ended. A message is a queue id and its `message_instance` (Postfix reuses queue ids).
-- Delay figures come from the last delivery line (Postfix `delays=a/b/c/d`: before the
-- queue manager / in the queue manager / connection setup / transmission).
--
-- Most runs' messages are landed already: a run with one maillog file holding messages takes
-- that file's rows of raw.maillog_messages, computed once per file by the ingest
-- (ingest/maillog_messages.py). Aggregating every run's lines here was ~194 s of a full build
-- at 236x the samples (issue 18, "Scale"). The other runs' messages come from their lines
-- (int_maillog__line_messages, the same definitions; macros/maillog.sql says which runs).

with

{% if use_landed_maillog() -%}
landed_messages as (
    select
        file_runs.run_id,
        landed.queue_id,
        landed.message_instance,
        landed.received_at,
        landed.client,
        landed.message_id,
        landed.sender,
        landed.size,
        landed.nrcpt,
        landed.first_delivery_at,
        landed.last_delivery_at,
        landed.delivered_recipients,
        landed.deferrals,
        landed.bounced_recipients,
        landed.final_status,
        landed.delay,
        landed.delay_before_qmgr,
        landed.delay_in_qmgr,
        landed.delay_conn_setup,
        landed.delay_transmission,
        landed.relay,
        landed.dsn,
        landed.relay_host
    from (
        select *
        from {{ ref('stg_maillog__messages') }}
        where {{ per_run_files_only('file_id') }}
            and not {{ maillog_line_path_files('file_id') }}
    ) as landed
    inner join {{ ref('int_file_runs') }} as file_runs
        on landed.file_id = file_runs.file_id
),
{%- endif %}

line_messages as (
    select *
    from {{ ref('int_maillog__line_messages') }}
    where {{ per_run_only('run_id') }}
),

final as (
    {% if use_landed_maillog() -%}
    select * from landed_messages
    union all
    {% endif -%}
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
        final_status,
        delay,
        delay_before_qmgr,
        delay_in_qmgr,
        delay_conn_setup,
        delay_transmission,
        relay,
        dsn,
        relay_host
    from line_messages
)

select * from final
