{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}

-- Queue ids of a run that name more than one message (Postfix reuses short queue ids): the
-- id has a line after its `removed` line, in the order `messages` numbers instances by
-- (logged_at, file_id, line_no; a line without a time sorts last). Tested with aggregates
-- only: two `removed` lines, or one that is not the id's last line. A few ids per run;
-- `messages` numbers only their lines with a window and aggregates every other id in one
-- pass (issue 18, "Scale").

with

queue_lines as (
    select
        run_id,
        queue_id,
        file_id,
        line_no,
        logged_at,
        kind = 'removed' as is_removed,
        {{ named_struct([
            ('sort_at', "coalesce(logged_at, cast('9999-12-31 00:00:00' as timestamp))"),
            ('sort_file', 'file_id'),
            ('sort_line', 'line_no'),
        ]) }} as line_order
    from {{ ref('int_maillog__lines') }}
    where queue_id is not null
        and {{ per_run_files_only('file_id') }}
),

final as (
    select
        run_id,
        queue_id,
        count(case when is_removed then 1 end) as removed_lines
    from queue_lines
    group by run_id, queue_id
    having
        count(case when is_removed then 1 end) > 1
        or (
            count(case when is_removed then 1 end) = 1
            and max(line_order) <> max(case when is_removed then line_order end)
        )
)

select * from final
