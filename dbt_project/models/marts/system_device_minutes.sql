{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- iostat -x device figures averaged per run-minute and device; since-boot report left out.

with

samples as (
    select
        file_runs.run_id,
        {{ dbt.date_trunc('minute', 'd.sampled_at') }} as minute_at,
        d.*
    from {{ ref('stg_iostat__devices') }} as d
    inner join {{ ref('int_file_runs') }} as file_runs
        on d.file_id = file_runs.file_id
    where not d.is_since_boot
        and d.sampled_at is not null
        and {{ per_run_files_only('d.file_id') }}
),

final as (
    select
        run_id,
        minute_at,
        device,
        count(*) as iostat_samples,
        avg(util_pct) as util_pct,
        avg(await_ms) as await_ms,
        avg(read_await_ms) as read_await_ms,
        avg(write_await_ms) as write_await_ms,
        avg(reads_per_s) as reads_per_s,
        avg(writes_per_s) as writes_per_s,
        avg(read_kb_per_s) as read_kb_per_s,
        avg(write_kb_per_s) as write_kb_per_s,
        avg(queue_size) as queue_size
    from samples
    group by run_id, minute_at, device
)

select * from final
