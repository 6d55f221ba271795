-- smtp-source's load per run: when it ran and how many messages it sent. The load window of a
-- run that smtp-source drove (runs, and the in-load balance of int_maillog__run_stats).

select
    runs.run_id,
    min(s.start_at) as load_start,
    max(s.end_at) as load_end,
    cast(sum(s.messages) as bigint) as messages
from {{ ref('stg_smtp_source__runs') }} as s
inner join {{ ref('int_file_runs') }} as runs
    on s.file_id = runs.file_id
group by runs.run_id
