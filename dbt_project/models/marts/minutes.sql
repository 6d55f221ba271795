{{ config(**per_run_config(folders=true)) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- One row per run-minute: what the load generator printed for the minute (postal rows),
-- what the MTA logged in it (maillog), and the sampled queue size. minute_at is the UTC
-- start of the minute. Maillog-only minutes (smtp-source runs, the drain after a run)
-- have no load-generator counters. The mailbox side (docs/mailbox.md): POP3/IMAP
-- sessions from the server's log (int_mailbox__minutes) and rabid's own rows
-- (int_rabid__minutes), beside postal's SMTP rows; a minute with only mailbox activity has a row.

with

postal as (
    select * from {{ ref('int_postal__minutes') }}
    where {{ per_run_folders_only('run_id') }}
),

maillog as (
    select * from {{ ref('int_maillog__minutes') }}
    where {{ per_run_ids_only('run_id') }}
),

queue as (
    select * from {{ ref('int_queue__minutes') }}
    where {{ per_run_folders_only('run_id') }}
),

mailbox as (
    select * from {{ ref('int_mailbox__minutes') }}
    where {{ per_run_ids_only('run_id') }}
),

rabid as (
    select * from {{ ref('int_rabid__minutes') }}
    where {{ per_run_folders_only('run_id') }}
),

keys as (
    select run_id, minute_at from postal
    union
    select run_id, minute_at from maillog
    union
    select run_id, minute_at from queue
    union
    select run_id, minute_at from mailbox
    union
    select run_id, minute_at from rabid
),

folder_runs as (
    select
        folder_runs.run_id,
        runs.start_utc
    from {{ ref('int_folder_runs') }} as folder_runs
    inner join {{ ref('stg_raw__runs') }} as runs
        on folder_runs.run_key = runs.run_key
    where {{ per_run_folders_only('folder_runs.run_id') }}
),

-- minute 0 is the first postal row; without one, rabid's first row, else the minute the load started
anchors as (
    select
        keys.run_id,
        coalesce(
            min(case when postal.minute_offset = 0 then postal.minute_at end),
            min(case when rabid.minute_offset = 0 then rabid.minute_at end),
            min({{ dbt.date_trunc('minute', 'folder_runs.start_utc') }}),
            min(keys.minute_at)
        ) as anchor_at
    from keys
    left join postal
        on keys.run_id = postal.run_id and keys.minute_at = postal.minute_at
    left join rabid
        on keys.run_id = rabid.run_id and keys.minute_at = rabid.minute_at
    left join folder_runs
        on keys.run_id = folder_runs.run_id
    group by keys.run_id
),

joined as (
    select
        keys.run_id,
        keys.minute_at,
        coalesce(postal.minute_offset, {{ dbt.datediff('anchors.anchor_at', 'keys.minute_at', 'minute') }})
            as minute_offset,
        postal.clock_label,
        postal.messages,
        postal.data_kb,
        postal.errors,
        postal.connections,
        postal.ssl_connections,
        coalesce(postal.is_partial, false) as is_partial,
        postal.minute_offset is not null as has_load_row,
        maillog.received,
        maillog.delivered,
        maillog.deferred,
        maillog.bounced,
        maillog.rejected,
        coalesce(maillog.from_drain_log, false) as from_drain_log,
        queue.queue_sampled,
        queue.queue_incoming,
        queue.queue_active,
        queue.queue_deferred,
        mailbox.mailbox_sessions,
        mailbox.pop3_sessions,
        mailbox.imap_sessions,
        mailbox.mailbox_logins,
        mailbox.mailbox_login_failures,
        mailbox.mailbox_disconnects,
        mailbox.msgs_retrieved,
        mailbox.msgs_deleted,
        mailbox.bytes_retrieved,
        mailbox.zero_byte_sessions,
        rabid.messages as rabid_messages,
        rabid.data_kb as rabid_data_kb,
        rabid.errors as rabid_errors,
        rabid.connections as rabid_connections,
        rabid.imap_connections as rabid_imap_connections,
        rabid.minute_offset is not null as has_rabid_row,
        postal.file_id,
        postal.line_no
    from keys
    inner join anchors
        on keys.run_id = anchors.run_id
    left join postal
        on keys.run_id = postal.run_id and keys.minute_at = postal.minute_at
    left join maillog
        on keys.run_id = maillog.run_id and keys.minute_at = maillog.minute_at
    left join queue
        on keys.run_id = queue.run_id and keys.minute_at = queue.minute_at
    left join mailbox
        on keys.run_id = mailbox.run_id and keys.minute_at = mailbox.minute_at
    left join rabid
        on keys.run_id = rabid.run_id and keys.minute_at = rabid.minute_at
),

final as (
    select
        *,
        -- messages received but not yet delivered, from the log (cumulative)
        case when received is not null or delivered is not null then
            cast(sum(coalesce(received, 0) - coalesce(delivered, 0)) over (
                partition by run_id order by minute_at rows between unbounded preceding and current row
            ) as bigint)
        end as queue_backlog
    from joined
)

select * from final
