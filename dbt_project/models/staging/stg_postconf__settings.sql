with

source as (
    select * from {{ source('raw', 'postconf_settings') }}
),

renamed as (
    select
        file_id,
        line_no,
        name,
        value
    from source
)

select * from renamed
