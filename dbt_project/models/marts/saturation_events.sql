{{ config(**per_run_config(folders=true)) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- One row per saturation event (int_saturation__events: where the full-minute rate steps
-- down and stays down), with what the run's other sources saw in the event's first minutes
-- (the minutes its level after is measured on): the queue, qmgr's active limit, CPU and
-- disk, SMTP errors by code and maillog deferrals. A signal is null when the run lacks it.

with

events as (
    select * from {{ ref('int_saturation__events') }}
    where {{ per_run_folders_only('run_id') }}
),

minutes as (
    select * from {{ ref('minutes') }}
    where {{ per_run_folders_only('run_id') }}
),

queue as (
    select * from {{ ref('int_queue__minutes') }}
    where {{ per_run_folders_only('run_id') }}
),

system as (
    select * from {{ ref('system_minutes') }}
    where {{ per_run_folders_only('run_id') }}
),

-- one source for SMTP errors: the load generator's own error lines (the maillog's
-- rejects of the same attempts are counted apart, as maillog_rejects)
smtp_errors as (
    select * from {{ ref('events') }}
    where smtp_code is not null
        and source = 'postal'
        and {{ per_run_folders_only('run_id') }}
),

runs as (
    select run_id, run_key, settings from {{ ref('runs') }}
    where {{ per_run_folders_only('run_id') }}
),

postconf as (
    select
        files.run_key,
        max(cast(p.value as bigint)) as active_limit
    from {{ ref('stg_postconf__settings') }} as p
    inner join {{ ref('stg_raw__files') }} as files
        on p.file_id = files.file_id
    where p.name = 'qmgr_message_active_limit'
        and files.run_key in (select run_key from runs)
    group by files.run_key
),

-- the manifest's changed setting wins over postconf -n (the seed spells it "messages")
active_limits as (
    select
        runs.run_id,
        coalesce(
            cast({{ json_string('runs.settings', 'qmgr_message_active_limit') }} as bigint),
            cast({{ json_string('runs.settings', 'qmgr_messages_active_limit') }} as bigint),
            postconf.active_limit
        ) as active_limit
    from runs
    left join postconf
        on runs.run_key = postconf.run_key
),

minute_signals as (
    select
        events.run_id,
        events.event_no,
        regr_slope(minutes.queue_backlog, minutes.minute_offset) as queue_backlog_slope_per_min,
        max(minutes.queue_backlog) as queue_backlog_max,
        cast(sum(minutes.errors) as bigint) as load_errors,
        cast(sum(minutes.deferred) as bigint) as maillog_deferrals,
        cast(sum(minutes.rejected) as bigint) as maillog_rejects
    from events
    inner join minutes
        on events.run_id = minutes.run_id
        and minutes.minute_at between events.start_minute_at and events.level_after_until
    group by events.run_id, events.event_no
),

queue_signals as (
    select
        events.run_id,
        events.event_no,
        max(queue.queue_incoming) as queue_incoming_max,
        max(queue.queue_active) as queue_active_max,
        max(queue.queue_deferred) as queue_deferred_max
    from events
    inner join queue
        on events.run_id = queue.run_id
        and queue.minute_at between events.start_minute_at and events.level_after_until
    group by events.run_id, events.event_no
),

system_signals as (
    select
        events.run_id,
        events.event_no,
        avg(100 - system.cpu_idle) as cpu_busy_pct,
        avg(system.cpu_iowait) as cpu_iowait_pct,
        max(system.disk_util_pct) as busiest_disk_util_pct
    from events
    inner join system
        on events.run_id = system.run_id
        and system.minute_at between events.start_minute_at and events.level_after_until
    group by events.run_id, events.event_no
),

code_counts as (
    select
        events.run_id,
        events.event_no,
        smtp_errors.smtp_code,
        count(*) as n
    from events
    inner join smtp_errors
        on events.run_id = smtp_errors.run_id
        and smtp_errors.event_at between events.start_minute_at and events.level_after_until
    group by events.run_id, events.event_no, smtp_errors.smtp_code
),

error_signals as (
    select
        run_id,
        event_no,
        cast(sum(n) as bigint) as smtp_errors,
        {{ sorted_string_agg("cast(smtp_code as " ~ dbt.type_string() ~ ") || ': ' || cast(n as " ~ dbt.type_string() ~ ")") }}
            as smtp_errors_by_code
    from code_counts
    group by run_id, event_no
),

final as (
    select
        events.run_id,
        cast(events.event_no as bigint) as event_no,
        events.start_minute_at,
        events.start_minute_offset,
        events.start_clock_label,
        events.end_minute_at,
        events.level_before,
        events.level_after,
        events.drop_pct,
        cast(events.ramp_minutes as bigint) as ramp_minutes,
        events.score,
        events.score_threshold,
        cast(events.duration_minutes as bigint) as duration_minutes,
        events.recovered,
        events.level_after_until as signals_until,
        minute_signals.queue_backlog_slope_per_min,
        minute_signals.queue_backlog_max,
        queue_signals.queue_incoming_max,
        queue_signals.queue_active_max,
        queue_signals.queue_deferred_max,
        active_limits.active_limit,
        cast(queue_signals.queue_active_max as double) / nullif(active_limits.active_limit, 0)
            as active_limit_share,
        system_signals.cpu_busy_pct,
        system_signals.cpu_iowait_pct,
        system_signals.busiest_disk_util_pct,
        minute_signals.load_errors,
        coalesce(error_signals.smtp_errors, 0) as smtp_errors,
        error_signals.smtp_errors_by_code,
        minute_signals.maillog_deferrals,
        minute_signals.maillog_rejects
    from events
    left join minute_signals
        on events.run_id = minute_signals.run_id and events.event_no = minute_signals.event_no
    left join queue_signals
        on events.run_id = queue_signals.run_id and events.event_no = queue_signals.event_no
    left join system_signals
        on events.run_id = system_signals.run_id and events.event_no = system_signals.event_no
    left join error_signals
        on events.run_id = error_signals.run_id and events.event_no = error_signals.event_no
    left join active_limits
        on events.run_id = active_limits.run_id
)

select * from final
