{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}, {{ ref('stg_raw__files') }}

-- One row per message per run: when the MTA received it, who sent it, and how its deliveries
-- ended. A message is a queue id and its `message_instance` (Postfix reuses queue ids).
-- Delay figures come from the last delivery line (Postfix `delays=a/b/c/d`: before the
-- queue manager / in the queue manager / connection setup / transmission).
--
-- The parser assembles the messages as it reads a run's maillog files, as one stream in time
-- order (crates/maillog/src/assemble.rs, the one definition; ingest/maillog_run.py lands
-- them): an instance is a queue id's lines up to and including its `removed` line. Here
-- each gets its run and its instance: its rank among its queue id's messages in the stream.
-- Messages without a received, header or delivery line count in that rank and are left out.

with

landed as (
    select
        file_runs.run_id,
        landed.*
    from (
        select *
        from {{ ref('stg_maillog__messages') }}
        where {{ per_run_files_only('file_id') }}
    ) as landed
    inner join {{ ref('int_file_runs') }} as file_runs
        on landed.file_id = file_runs.file_id
),

numbered as (
    select
        *,
        cast(row_number() over (partition by run_id, queue_id order by stream_line) as bigint) as message_instance
    from landed
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
        final_status,
        delay,
        delay_before_qmgr,
        delay_in_qmgr,
        delay_conn_setup,
        delay_transmission,
        relay,
        dsn,
        relay_host
    from numbered
    where has_lines
)

select * from final
