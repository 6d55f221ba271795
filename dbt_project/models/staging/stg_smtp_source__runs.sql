with

source as (
    select * from {{ source('raw', 'smtp_source_runs') }}
),

renamed as (
    select
        file_id,
        run_seq,
        start_at,
        end_at,
        duration_s,
        messages,
        exit_code,
        sink_sessions,
        sink_quits,
        sink_messages
    from source
)

select * from renamed
