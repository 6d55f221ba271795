-- One row per printed rabid per-minute row: the mailbox side's client (rabid, from the same
-- package as postal, drains the mailboxes over POP, and IMAP with -i). Same clock rules as
-- postal's rows (int_postal__minutes): minute_at is the UTC start of the minute a row covers.
-- rabid 0.75 often prints no rows at all (README "Mailbox side"): the server log
-- (int_mailbox__minutes) is then the only per-minute source.

with

postal_rows as (
    select * from {{ ref('stg_postal__rows') }}
),

segment_runs as (
    select * from {{ ref('int_postal__segment_runs') }}
    where not is_detached_stderr
        and side = 'mailbox'
),

final as (
    select
        segment_runs.run_id,
        {{ add_minutes('segment_runs.first_label_utc', 'postal_rows.minute_index - 1') }} as minute_at,
        postal_rows.minute_index as minute_offset,
        postal_rows.clock_label,
        postal_rows.messages,
        postal_rows.data_kb,
        postal_rows.errors,
        postal_rows.connections,
        postal_rows.imap_connections,
        postal_rows.is_partial,
        postal_rows.file_id,
        postal_rows.line_no
    from postal_rows
    inner join segment_runs
        on postal_rows.file_id = segment_runs.file_id
        and postal_rows.segment = segment_runs.segment
)

select * from final
