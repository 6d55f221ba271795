{#
  The per-minute rows of one side of a run from the postal family's output (postal/bhm on the
  SMTP side, rabid on the mailbox side; int_postal__segment_runs.side), one row per printed row.
  minute_at is the UTC start of the minute a row covers: postal labels a row with the clock at
  the END of its interval. `side_columns`: the counters only that side prints (postal's SSL
  connections, rabid's IMAP connections).
  Per run folder incremental on DuckDB (the caller's per_run_config(folders=true)).
#}
{% macro postal_family_minutes(side, side_columns) %}
with

segment_runs as (
    select * from {{ ref('int_postal__segment_runs') }}
    where not is_detached_stderr
        and side = '{{ side }}'
        and {{ per_run_folders_only('run_id') }}
),

postal_rows as (
    select * from {{ ref('stg_postal__rows') }}
    where file_id in (select file_id from segment_runs)
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
        {%- for column in side_columns %}
        postal_rows.{{ column }},
        {%- endfor %}
        -- the first row is a full minute when the load began at that minute's start
        postal_rows.is_repeat_label
            or (postal_rows.is_first_row and not segment_runs.first_row_full) as is_partial,
        postal_rows.file_id,
        postal_rows.line_no
    from postal_rows
    inner join segment_runs
        on postal_rows.file_id = segment_runs.file_id
        and postal_rows.segment = segment_runs.segment
    -- a run nothing dates (no run.toml date or start, no stamp with a year): its clock
    -- labels place no minute; the run says so (runs.status_reason), its rows stay landed
    where segment_runs.first_label_utc is not null
)

select * from final
{% endmacro %}
