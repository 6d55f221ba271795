with

source as (
    select * from {{ source('raw', 'maillog_messages') }}
),

renamed as (
    select
        file_id,
        first_file_id,
        first_line_no,
        stream_line,
        queue_id,
        has_lines = 1 as has_lines,
        received_at,
        client,
        message_id,
        sender,
        size,
        nrcpt,
        first_delivery_at,
        last_delivery_at,
        delivered_recipients,
        deferrals,
        bounced_recipients,
        final_status,
        delay,
        delay_before_qmgr,
        delay_in_qmgr,
        delay_conn_setup,
        delay_transmission,
        relay,
        dsn,
        relay_host
    from source
)

select * from renamed
