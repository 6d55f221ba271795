with

source as (
    select * from {{ source('raw', 'postal_events') }}
),

renamed as (
    select
        file_id,
        line_no,
        item_no,
        segment,
        next_row_seq,
        kind,
        smtp_code,
        enhanced_code,
        detail,
        text
    from source
)

select * from renamed
