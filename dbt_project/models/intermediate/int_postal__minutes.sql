-- One row per printed postal per-minute row. minute_at is the start (UTC) of the minute the
-- counters cover: postal labels a row with the clock at the END of its interval.
-- The SMTP side only (postal, bhm); rabid's rows are in int_rabid__minutes.

with

postal_rows as (
    select * from {{ ref('stg_postal__rows') }}
),

segment_runs as (
    select * from {{ ref('int_postal__segment_runs') }}
    where not is_detached_stderr
        and side = 'smtp'  -- rabid's rows: int_rabid__minutes
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
        postal_rows.ssl_connections,
        postal_rows.is_partial,
        postal_rows.file_id,
        postal_rows.line_no
    from postal_rows
    inner join segment_runs
        on postal_rows.file_id = segment_runs.file_id
        and postal_rows.segment = segment_runs.segment
)

select * from final
