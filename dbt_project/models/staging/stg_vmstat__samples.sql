with

source as (
    select * from {{ source('raw', 'vmstat_samples') }}
),

renamed as (
    select
        file_id,
        line_no,
        segment,
        sample_index,
        sampled_at,
        is_since_boot,
        layout,
        r as run_queue,
        b as blocked,
        swpd as swap_used_kb,
        si as swap_in,
        so as swap_out,
        bi as blocks_in,
        bo as blocks_out,
        {{ adapter.quote('in') }} as interrupts,
        cs as context_switches,
        us as cpu_user,
        sy as cpu_system,
        id as cpu_idle,
        wa as cpu_iowait,
        st as cpu_steal
    from source
)

select * from renamed
