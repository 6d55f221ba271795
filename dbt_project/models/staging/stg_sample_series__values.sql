with

source as (
    select * from {{ source('raw', 'sample_values') }}
),

renamed as (
    select
        file_id,
        line_no,
        seq,
        value
    from source
)

select * from renamed
