{{ config(**per_run_config(folders=true)) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- postal's stderr events, placed in minutes.
-- postal prints an error before the row of the minute it happened in, so an event
-- takes the minute of the row it precedes; events after the last row fall in the
-- (unprinted) minute after it; a stderr-only file has no minutes at all.

with

segment_runs as (
    select * from {{ ref('int_postal__segment_runs') }}
    where {{ per_run_folders_only('run_id') }}
),

postal_events as (
    select * from {{ ref('stg_postal__events') }}
    where file_id in (select file_id from segment_runs)
),

postal_rows as (
    select * from {{ ref('stg_postal__rows') }}
    where file_id in (select file_id from segment_runs)
),

segment_span as (
    select
        file_id,
        segment,
        max(minute_index) as last_minute_index
    from postal_rows
    group by file_id, segment
),

placed as (
    select
        segment_runs.run_id,
        segment_runs.side,
        segment_runs.first_label_utc,
        case
            when segment_runs.is_detached_stderr then null
            when postal_events.next_row_seq is not null then postal_rows.minute_index
            else segment_span.last_minute_index + 1
        end as minute_offset,
        postal_events.*
    from postal_events
    inner join segment_runs
        on postal_events.file_id = segment_runs.file_id
        and postal_events.segment = segment_runs.segment
    left join postal_rows
        on postal_events.file_id = postal_rows.file_id
        and postal_events.segment = postal_rows.segment
        and postal_events.next_row_seq = postal_rows.row_seq
    left join segment_span
        on postal_events.file_id = segment_span.file_id
        and postal_events.segment = segment_span.segment
),

final as (
    select
        run_id,
        {{ add_minutes('first_label_utc', 'minute_offset - 1') }} as event_at,
        minute_offset,
        -- rabid's error lines are the mailbox side's: kept apart from postal's SMTP errors
        case when side = 'mailbox' then 'rabid' else 'postal' end as source,
        kind,
        case
            when smtp_code >= 500 then 'permanent'
            when smtp_code >= 400 then 'temporary'
            else 'error'
        end as severity,
        smtp_code,
        enhanced_code,
        detail,
        file_id,
        line_no,
        item_no
    from placed
)

select * from final
