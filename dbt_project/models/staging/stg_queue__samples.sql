with

source as (
    select * from {{ source('raw', 'queue_samples') }}
),

renamed as (
    select
        file_id,
        line_no,
        sampled_at,
        incoming,
        active,
        deferred,
        maildrop
    from source
)

select * from renamed
