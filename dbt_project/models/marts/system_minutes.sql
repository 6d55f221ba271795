{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- Per run-minute CPU, memory and I/O (vmstat) with the busiest disk (iostat) and the
-- load generator's messages for the same minute, to plot throughput against I/O wait.

with

vmstat as (
    select * from {{ ref('int_vmstat__minutes') }}
    where {{ per_run_only('run_id') }}
),

devices as (
    select * from {{ ref('system_device_minutes') }}
    where {{ per_run_only('run_id') }}
),

busiest as (
    select
        *,
        row_number() over (partition by run_id, minute_at order by util_pct desc, device) as rank_in_minute
    from devices
),

keys as (
    select run_id, minute_at from vmstat
    union
    select run_id, minute_at from devices
),

runs as (
    select run_id, started_at from {{ ref('runs') }}
    where {{ per_run_only('run_id') }}
),

minutes as (
    select run_id, minute_at, minute_offset, messages from {{ ref('minutes') }}
    where {{ per_run_only('run_id') }}
),

final as (
    select
        keys.run_id,
        keys.minute_at,
        coalesce(
            minutes.minute_offset,
            {{ dbt.datediff(dbt.date_trunc('minute', 'runs.started_at'), 'keys.minute_at', 'minute') }}
        ) as minute_offset,
        minutes.messages,
        vmstat.vmstat_samples,
        vmstat.cpu_user,
        vmstat.cpu_system,
        vmstat.cpu_idle,
        vmstat.cpu_iowait,
        vmstat.cpu_steal,
        vmstat.run_queue,
        vmstat.blocked,
        vmstat.blocks_in,
        vmstat.blocks_out,
        vmstat.interrupts,
        vmstat.context_switches,
        vmstat.swap_used_kb,
        vmstat.swap_in,
        vmstat.swap_out,
        busiest.device as busiest_device,
        busiest.util_pct as disk_util_pct,
        busiest.await_ms as disk_await_ms,
        busiest.read_await_ms as disk_read_await_ms,
        busiest.write_await_ms as disk_write_await_ms,
        busiest.writes_per_s as disk_writes_per_s,
        busiest.write_kb_per_s as disk_write_kb_per_s
    from keys
    left join vmstat
        on keys.run_id = vmstat.run_id
        and keys.minute_at = vmstat.minute_at
    left join busiest
        on keys.run_id = busiest.run_id
        and keys.minute_at = busiest.minute_at
        and busiest.rank_in_minute = 1
    left join minutes
        on keys.run_id = minutes.run_id
        and keys.minute_at = minutes.minute_at
    left join runs
        on keys.run_id = runs.run_id
)

select * from final
