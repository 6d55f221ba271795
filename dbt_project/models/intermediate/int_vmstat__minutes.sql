{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- vmstat samples averaged per run-minute; since-boot averages left out.

with

samples as (
    select
        file_runs.run_id,
        {{ dbt.date_trunc('minute', 'v.sampled_at') }} as minute_at,
        v.*
    from {{ ref('stg_vmstat__samples') }} as v
    inner join {{ ref('int_file_runs') }} as file_runs
        on v.file_id = file_runs.file_id
    where not v.is_since_boot
        and v.sampled_at is not null
        and {{ per_run_files_only('v.file_id') }}
),

final as (
    select
        run_id,
        minute_at,
        count(*) as vmstat_samples,
        avg(cpu_user) as cpu_user,
        avg(cpu_system) as cpu_system,
        avg(cpu_idle) as cpu_idle,
        avg(cpu_iowait) as cpu_iowait,
        avg(cpu_steal) as cpu_steal,
        avg(run_queue) as run_queue,
        avg(blocked) as blocked,
        avg(blocks_in) as blocks_in,
        avg(blocks_out) as blocks_out,
        avg(interrupts) as interrupts,
        avg(context_switches) as context_switches,
        avg(swap_used_kb) as swap_used_kb,
        avg(swap_in) as swap_in,
        avg(swap_out) as swap_out
    from samples
    group by run_id, minute_at
)

select * from final
