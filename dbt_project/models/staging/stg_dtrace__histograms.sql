with

source as (
    select * from {{ source('raw', 'dtrace_histograms') }}
),

renamed as (
    select
        file_id,
        line_no,
        block_index,
        tool,
        kind,
        agg_name as aggregation,
        key_text as aggregation_key,
        bucket_index,
        bucket_label,
        bucket_low,
        bucket_high,
        count
    from source
)

select * from renamed
