with

source as (
    select * from {{ source('raw', 'files') }}
),

renamed as (
    select
        file_id,
        run_key,
        path,
        size_bytes,
        sha256,
        format,
        parser_version,
        status,
        message,
        lines_total,
        lines_parsed,
        lines_noise,
        lines_quarantined,
        ingested_at
    from source
)

select * from renamed
