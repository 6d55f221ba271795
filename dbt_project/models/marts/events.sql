{{ config(**per_run_config(folders=true)) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}

-- Everything that went wrong or was worth noting, one row per source line item, with
-- provenance (file_id, line_no). postal events have minute resolution (see
-- int_postal__events); maillog events carry their log timestamp. The mailbox side: rabid's
-- error lines (source `rabid`, int_postal__events) and the POP3/IMAP server's authentication
-- failures and disconnects without a clean logout (source `maillog`, kinds mailbox_*).

with

postal as (
    select * from {{ ref('int_postal__events') }}
    where {{ per_run_folders_only('run_id') }}
),

maillog_lines as (
    select * from {{ ref('int_maillog__lines') }}
    where {{ per_run_files_only('file_id', folders=true) }}
        -- the kinds and statuses an event can have (the `maillog` CTE's condition, by the
        -- landed columns): the scan skips the rest, most of them deliveries that were sent
        and (
            kind in (
                'expired', 'reject', 'warning', 'error', 'fatal', 'panic', 'reject_warning',
                'mailbox_auth_failed', 'mailbox_disconnect'
            )
            or (kind = 'delivery' and status in ('deferred', 'bounced', 'expired'))
        )
),

anchors as (
    select run_id, min({{ add_minutes('minute_at', '-minute_offset') }}) as anchor_at
    from {{ ref('minutes') }}
    where {{ per_run_folders_only('run_id') }}
    group by run_id
),

maillog as (
    select
        maillog_lines.run_id,
        maillog_lines.logged_at as event_at,
        {{ dbt.datediff('anchors.anchor_at', 'maillog_lines.minute_at', 'minute') }} as minute_offset,
        'maillog' as source,
        case
            when is_deferral then 'deferred'
            when is_bounced then 'bounced'
            when is_expired then 'expired'
            when is_rejected then 'reject'
            when lower(coalesce(maillog_lines.message, '')) like '%lookup%fail%'
                or lower(coalesce(maillog_lines.message, '')) like '%lookup error%' then 'lookup_failure'
            else maillog_lines.kind
        end as kind,
        case
            when maillog_lines.kind in ('fatal', 'panic') then 'fatal'
            when maillog_lines.kind = 'error' then 'error'
            when maillog_lines.kind = 'warning' then 'warning'
            when maillog_lines.kind like 'mailbox%' then 'error'
            when is_bounced or is_expired or maillog_lines.smtp_code >= 500 then 'permanent'
            else 'temporary'
        end as severity,
        maillog_lines.smtp_code,
        maillog_lines.enhanced_code,
        coalesce(maillog_lines.reason, maillog_lines.status_text, maillog_lines.detail, maillog_lines.message)
            as detail,
        maillog_lines.file_id,
        maillog_lines.line_no,
        0 as item_no
    from maillog_lines
    left join anchors
        on maillog_lines.run_id = anchors.run_id
    where is_deferral or is_bounced or is_expired or is_rejected
        or maillog_lines.kind in (
            'warning', 'error', 'fatal', 'panic', 'reject_warning', 'mailbox_auth_failed', 'mailbox_disconnect'
        )
)

select * from postal
union all
select * from maillog
