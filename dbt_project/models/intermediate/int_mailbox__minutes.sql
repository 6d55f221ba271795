{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}

-- The mailbox side per run-minute, from the POP3/IMAP server's log lines (Dovecot, Courier:
-- the maillog parser's mailbox_* kinds). A session counts in the minute it ended.
--   session          = a logged-in session's end line carrying its counters (Dovecot
--                      `pop3(u)...: Disconnected: Logged out top=../.., retr=../.., ...` or
--                      `Disconnected: Connection closed ...`; Courier `LOGOUT`/`DISCONNECTED`, ...)
--   zero-byte session = such a session whose retr bytes are 0 (seed 003's "POP connections that
--                      retrieved zero bytes": the client found the mailbox empty)
--   retrieved        = RETR (POP) / body fetches (IMAP); Courier logs bytes only, so its
--                      messages are null and only bytes_retrieved counts it
--   login failure    = an authentication failure line; disconnect = any line of kind
--                      mailbox_disconnect (a session or a pre-login connection that did not log out)

with

lines as (
    select * from {{ ref('int_maillog__lines') }}
    where kind like 'mailbox%'
        and logged_at is not null
        and {{ per_run_files_only('file_id') }}
),

classified as (
    select
        *,
        (
            kind in ('mailbox_logout', 'mailbox_disconnect')
            and coalesce(retr_bytes, bytes_out) is not null
        ) as is_session_end
    from lines
),

final as (
    select
        run_id,
        minute_at,
        count(case when is_session_end then 1 end) as mailbox_sessions,
        count(case when is_session_end and service = 'pop3' then 1 end) as pop3_sessions,
        count(case when is_session_end and service = 'imap' then 1 end) as imap_sessions,
        count(case when kind = 'mailbox_login' then 1 end) as mailbox_logins,
        count(case when kind = 'mailbox_auth_failed' then 1 end) as mailbox_login_failures,
        count(case when kind = 'mailbox_disconnect' then 1 end) as mailbox_disconnects,
        cast(sum(case when is_session_end then retr_msgs end) as bigint) as msgs_retrieved,
        cast(sum(case when is_session_end then del_msgs end) as bigint) as msgs_deleted,
        cast(sum(case when is_session_end then retr_bytes end) as bigint) as bytes_retrieved,
        count(case when is_session_end and retr_bytes = 0 then 1 end) as zero_byte_sessions
    from classified
    group by run_id, minute_at
)

select * from final
