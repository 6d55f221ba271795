-- The data sets the comparisons mart compares, one row per value:
-- a run's full-minute message counts, or a sample series (DTrace timings etc.).

select
    'run_throughput' as set_kind,
    run_id as set_name,
    run_id,
    cast(messages as double) as value
from {{ ref('int_postal__minutes') }}
where not is_partial

union all

select
    'series' as set_kind,
    series as set_name,
    run_id,
    value
from {{ ref('dtrace_samples') }}
