with

source as (
    select * from {{ source('raw', 'postal_segments') }}
),

renamed as (
    select
        file_id,
        segment,
        started_by,
        first_line,
        last_line,
        header,
        n_rows,
        n_events
    from source
)

select * from renamed
