with

source as (
    select * from {{ source('raw', 'maillog') }}
),

renamed as (
    select
        file_id,
        line_no,
        ts as logged_at,
        ts_format,
        host,
        program,
        pid,
        queue_id,
        kind,
        client,
        message_id,
        sender,
        size,
        nrcpt,
        recipient,
        orig_to,
        relay,
        conn_use,
        delay,
        delay_before_qmgr,
        delay_in_qmgr,
        delay_conn_setup,
        delay_transmission,
        dsn,
        status,
        status_text,
        reject_action,
        reject_stage,
        smtp_code,
        enhanced_code,
        reason,
        severity,
        detail,
        message,
        -- pflogsumm's reading (tests/test_maillog_parser.py): postfix daemons, the smtps/
        -- submission prefixes stripped
        regexp_replace(program, '^postfix[^/]*/((smtps|submission)/)?', '') as daemon,
        program like 'postfix%' as is_postfix
    from source
)

select * from renamed
