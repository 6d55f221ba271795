-- How many messages a day a configuration could carry at each observed rate
-- (seed 000: 4,000/min is about 5.76 M/day). Full minutes only.

with

runs as (
    select * from {{ ref('runs') }}
    where full_minutes > 0
),

final as (
    select
        run_id,
        label,
        settings,
        full_minutes as minutes_used,
        peak_msgs_per_min,
        sustained_msgs_per_min,
        p10_msgs_per_min as conservative_msgs_per_min,
        {{ var('minutes_per_day') }} as minutes_per_day,
        peak_msgs_per_min * {{ var('minutes_per_day') }} as peak_msgs_per_day,
        sustained_msgs_per_min * {{ var('minutes_per_day') }} as sustained_msgs_per_day,
        p10_msgs_per_min * {{ var('minutes_per_day') }} as conservative_msgs_per_day,
        'injection (load generator per-minute rows)' as basis
    from runs
)

select * from final
