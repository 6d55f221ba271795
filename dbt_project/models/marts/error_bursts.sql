{{ config(**per_run_config(folders=true)) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- Clusters of consecutive minutes with errors; one clean (or missing) minute ends a burst.

with

error_minutes as (
    select
        run_id,
        minute_at,
        minute_offset,
        errors,
        minute_offset - row_number() over (partition by run_id order by minute_offset) as island
    from {{ ref('minutes') }}
    where errors > 0
        and {{ per_run_folders_only('run_id') }}
),

bursts as (
    select
        run_id,
        island,
        min(minute_at) as start_at,
        {{ add_minutes('max(minute_at)', 1) }} as end_at,
        min(minute_offset) as start_offset,
        max(minute_offset) as end_offset,
        count(*) as minutes,
        cast(sum(errors) as bigint) as errors,
        max(errors) as peak_errors_per_min
    from error_minutes
    group by run_id, island
),

numbered as (
    select
        *,
        cast(row_number() over (partition by run_id order by start_offset) as bigint) as burst_no
    from bursts
),

codes as (
    select
        numbered.run_id,
        numbered.burst_no,
        coalesce(
            cast(events.smtp_code as {{ dbt.type_string() }}) || coalesce(' ' || events.enhanced_code, ''),
            events.kind
        ) as code,
        count(*) as n
    from numbered
    inner join {{ ref('events') }} as events
        on numbered.run_id = events.run_id
        and events.minute_offset between numbered.start_offset and numbered.end_offset
    -- one source: the load generator's error lines, as `errors` counts them (the maillog's
    -- reject lines of the same attempts would count each error twice)
    where events.source = 'postal'
        and {{ per_run_folders_only('events.run_id') }}
    group by 1, 2, 3
),

dominant as (
    select
        run_id,
        burst_no,
        code as dominant_code,
        n as dominant_code_events,
        row_number() over (partition by run_id, burst_no order by n desc, code) as rank_in_burst
    from codes
),

final as (
    select
        numbered.run_id,
        numbered.burst_no,
        numbered.start_at,
        numbered.end_at,
        numbered.start_offset,
        numbered.end_offset,
        numbered.minutes,
        numbered.errors,
        numbered.peak_errors_per_min,
        dominant.dominant_code,
        dominant.dominant_code_events
    from numbered
    left join dominant
        on numbered.run_id = dominant.run_id
        and numbered.burst_no = dominant.burst_no
        and dominant.rank_in_burst = 1
)

select * from final
