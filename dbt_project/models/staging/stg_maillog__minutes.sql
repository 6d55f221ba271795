with

source as (
    select * from {{ source('raw', 'maillog_minutes') }}
),

renamed as (
    select
        file_id,
        minute_at,
        lines,
        received,
        delivered,
        deferred,
        bounced,
        rejected
    from source
)

select * from renamed
