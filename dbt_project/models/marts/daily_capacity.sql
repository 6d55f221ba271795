-- How many messages a day a configuration could carry at each observed rate
-- (seed 000: 4,000/min is about 5.76 M/day). Injection rates use full minutes only.
-- A run whose queue grew could not carry its injection rate for a day: for it the
-- delivery rate is the sustainable figure. Growth below 1 % of the injection rate is
-- messages in flight when the load stopped, not a growing queue.

with

runs as (
    select * from {{ ref('runs') }}
    where full_minutes > 0 or delivered_msgs_per_min is not null
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
        delivered_msgs_per_min,
        injected_msgs_per_min,
        queue_growth_per_min,
        {{ var('minutes_per_day') }} as minutes_per_day,
        peak_msgs_per_min * {{ var('minutes_per_day') }} as peak_msgs_per_day,
        sustained_msgs_per_min * {{ var('minutes_per_day') }} as sustained_msgs_per_day,
        p10_msgs_per_min * {{ var('minutes_per_day') }} as conservative_msgs_per_day,
        delivered_msgs_per_min * {{ var('minutes_per_day') }} as delivered_msgs_per_day,
        case
            when queue_growth_per_min > 0.01 * injected_msgs_per_min then delivered_msgs_per_min * {{ var('minutes_per_day') }}
            else coalesce(sustained_msgs_per_min, delivered_msgs_per_min) * {{ var('minutes_per_day') }}
        end as sustainable_msgs_per_day,
        case
            when queue_growth_per_min > 0.01 * injected_msgs_per_min then 'delivery (the queue grew during the run)'
            when sustained_msgs_per_min is not null then 'injection (median full minute)'
            else 'delivery (no full injection minute)'
        end as sustainable_basis,
        'injection: load generator per-minute rows; delivery: maillog status=sent' as basis
    from runs
)

select * from final
