-- The run each run is compared with by default (the "Which setting won" and "Run story"
-- dashboards): the baseline its manifest names, else the latest run of the same MTA and load
-- generator that started before it, else the earliest that started after it. Only runs with
-- at least 2 full minutes qualify as a default: ministat needs two values a side.

with

runs as (
    select run_id, mta, tool, started_at, full_minutes
    from {{ ref('runs') }}
),

named as (
    select r.run_id, max(m.baseline_run_id) as baseline_run_id
    from {{ ref('runs') }} as r
    inner join {{ ref('stg_raw__runs') }} as m
        on r.run_key = m.run_key
    where m.baseline_run_id is not null
        and m.baseline_run_id <> r.run_id
    group by r.run_id
),

candidates as (
    select
        r.run_id,
        b.run_id as baseline_run_id,
        b.started_at < r.started_at as started_before,
        row_number() over (
            partition by r.run_id
            order by
                case when b.started_at < r.started_at then 0 else 1 end,
                case when b.started_at < r.started_at then b.started_at end desc,
                b.started_at,
                b.run_id
        ) as preference
    from runs as r
    inner join runs as b
        on b.mta is not distinct from r.mta
        and b.tool is not distinct from r.tool
        and b.run_id <> r.run_id
        and b.full_minutes >= 2
),

final as (
    select
        r.run_id,
        coalesce(named.baseline_run_id, c.baseline_run_id) as baseline_run_id,
        case
            when named.baseline_run_id is not null then 'named in the manifest'
            when c.started_before then 'latest earlier run of the same MTA and load generator'
            when c.baseline_run_id is not null then 'no earlier run: the first later run of the same MTA and load generator'
            else 'none: no other run of the same MTA and load generator with 2 full minutes'
        end as baseline_reason
    from runs as r
    left join named
        on r.run_id = named.run_id
    left join candidates as c
        on r.run_id = c.run_id
        and c.preference = 1
)

select * from final
