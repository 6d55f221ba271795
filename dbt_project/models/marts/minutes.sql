-- One row per run-minute: what the load generator printed for the minute (postal rows),
-- what the MTA logged in it (maillog), and the sampled queue size. minute_at is the UTC
-- start of the minute. Maillog-only minutes (smtp-source runs, the drain after a run)
-- have no load-generator counters.

with

postal as (
    select * from {{ ref('int_postal__minutes') }}
),

maillog as (
    select * from {{ ref('int_maillog__minutes') }}
),

queue as (
    select * from {{ ref('int_queue__minutes') }}
),

keys as (
    select run_id, minute_at from postal
    union
    select run_id, minute_at from maillog
    union
    select run_id, minute_at from queue
),

folder_runs as (
    select
        folder_runs.run_id,
        runs.start_utc
    from {{ ref('int_folder_runs') }} as folder_runs
    inner join {{ ref('stg_raw__runs') }} as runs
        on folder_runs.run_key = runs.run_key
),

-- minute 0 is the first postal row; without one, the minute the load started
anchors as (
    select
        keys.run_id,
        coalesce(
            min(case when postal.minute_offset = 0 then postal.minute_at end),
            min({{ dbt.date_trunc('minute', 'folder_runs.start_utc') }}),
            min(keys.minute_at)
        ) as anchor_at
    from keys
    left join postal
        on keys.run_id = postal.run_id and keys.minute_at = postal.minute_at
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
