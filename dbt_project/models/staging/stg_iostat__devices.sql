with

source as (
    select * from {{ source('raw', 'iostat_devices') }}
),

renamed as (
    select
        file_id,
        line_no,
        segment,
        report_index,
        sampled_at,
        is_since_boot,
        device,
        r_s as reads_per_s,
        w_s as writes_per_s,
        rkb_s as read_kb_per_s,
        wkb_s as write_kb_per_s,
        r_await as read_await_ms,
        w_await as write_await_ms,
        -- sysstat 12 dropped the combined await; older versions print only it
        coalesce(await, (r_await * r_s + w_await * w_s) / nullif(r_s + w_s, 0)) as await_ms,
        aqu_sz as queue_size,
        util as util_pct
    from source
)

select * from renamed
