-- ministat's per-set figures: N, min, max, median (the sorted value at index n/2, the
-- upper middle for even n, not averaged), mean, and variance (Σx² − (Σx)²/n)/(n−1), as
-- macros/ministat.sql computes them; with the set's comparison group and named baseline
-- (see int_sample_sets).

with

ranked as (
    select
        *,
        row_number() over (partition by set_kind, set_name order by value) - 1 as idx,
        count(*) over (partition by set_kind, set_name) as n
    from {{ ref('int_sample_sets') }}
),

final as (
    select
        set_kind,
        set_name,
        min(run_id) as run_id,
        min(comparison_group) as comparison_group,
        min(baseline_set_name) as baseline_set_name,
        count(*) as n,
        min(value) as min_value,
        max(value) as max_value,
        {{ ministat_median('value', 'idx', 'n') }} as median,
        {{ ministat_mean('value') }} as mean,
        {{ ministat_variance('value') }} as variance
    from ranked
    group by set_kind, set_name
)

select *, {{ ministat_sqrt('variance') }} as stddev from final
