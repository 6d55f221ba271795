{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- The queue sampler's last sample in each run-minute (queue.txt).

with

samples as (
    select
        runs.run_id,
        {{ dbt.date_trunc('minute', 'q.sampled_at') }} as minute_at,
        q.sampled_at,
        q.incoming + q.active + q.deferred + q.maildrop as queued,
        q.incoming,
        q.active,
        q.deferred,
        row_number() over (
            partition by runs.run_id, {{ dbt.date_trunc('minute', 'q.sampled_at') }}
            order by q.sampled_at desc
        ) as recency
    from {{ ref('stg_queue__samples') }} as q
    inner join {{ ref('int_file_runs') }} as runs
        on q.file_id = runs.file_id
    where {{ per_run_files_only('q.file_id') }}
)

select
    run_id,
    minute_at,
    queued as queue_sampled,
    incoming as queue_incoming,
    active as queue_active,
    deferred as queue_deferred
from samples
where recency = 1
