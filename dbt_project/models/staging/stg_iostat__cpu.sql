with

source as (
    select * from {{ source('raw', 'iostat_cpu') }}
),

renamed as (
    select
        file_id,
        line_no,
        segment,
        report_index,
        sampled_at,
        is_since_boot,
        {{ adapter.quote('user') }} as cpu_user,
        system as cpu_system,
        iowait as cpu_iowait,
        steal as cpu_steal,
        idle as cpu_idle
    from source
)

select * from renamed
