-- The run a folder-level file (vmstat, iostat, DTrace, maillog ...) belongs to. A folder
-- whose postal output holds several runs has no single run for such files: they map to
-- the first one, flagged, because samplers and logs run across the whole folder.

with

folders as (
    select * from {{ ref('stg_raw__runs') }}
),

segment_runs as (
    select
        run_key,
        run_id,
        row_number() over (partition by run_key order by run_seq) as pick,
        max(runs_in_folder) over (partition by run_key) as runs_in_folder
    from (
        select distinct run_key, run_id, run_seq, runs_in_folder
        from {{ ref('int_postal__segment_runs') }}
        where side = 'smtp'
    )
),

final as (
    select
        folders.run_key,
        coalesce(segment_runs.run_id, folders.folder_run_id) as run_id,
        coalesce(segment_runs.runs_in_folder, 1) > 1 as is_shared_folder
    from folders
    left join segment_runs
        on folders.run_key = segment_runs.run_key
        and segment_runs.pick = 1
)

select * from final
