with

source as (
    select * from {{ source('raw', 'postal_rows') }}
),

renamed as (
    select
        file_id,
        line_no,
        item_no,
        segment,
        row_seq,
        minute_index,
        clock_label,
        clock_minute,
        first_clock_minute,
        messages,
        data_kb,
        errors,
        connections,
        ssl_connections,
        imap_connections,
        is_first_row,
        is_repeat_label,
        -- the first row covers a partial minute; bhm's repeated last label is a partial final minute
        (is_first_row or is_repeat_label) as is_partial
    from source
)

select * from renamed
