-- The data sets the comparisons mart compares, one row per value, with the comparison group
-- each set is compared within:
--   run_throughput (a run's full-minute message counts): the manifest's `group` if set, else
--     the runs of one experiment folder (the folder holding the run folder, relative to the
--     archive root) that share MTA, load tool and host; `baseline` names the one run it is
--     compared with instead.
--   series (a sample series, e.g. DTrace timings): the series of one run folder.

with

runs as (
    select
        run_key,
        group_name,
        baseline_run_id,
        coalesce(
            group_name,
            -- the experiment: run_key up to its last '/' (or a bundle's '!'); '.' = the archive root
            case
                when {{ regex_match('run_key', '[/!]') }} then regexp_replace(run_key, '[/!][^/!]*$', '')
                else '.'
            end
            || ' · ' || coalesce(mta, '-')
            || ' · ' || coalesce(tool, '-')
            || ' · ' || coalesce(hostname, '-')
        ) as comparison_group
    from {{ ref('stg_raw__runs') }}
),

run_keys as (
    select distinct run_key, run_id
    from {{ ref('int_postal__segment_runs') }}
    where side = 'smtp'
),

throughput as (
    select
        'run_throughput' as set_kind,
        minutes.run_id as set_name,
        minutes.run_id,
        runs.comparison_group,
        runs.baseline_run_id as baseline_set_name,
        cast(minutes.messages as double) as value
    from {{ ref('int_postal__minutes') }} as minutes
    inner join run_keys
        on minutes.run_id = run_keys.run_id
    inner join runs
        on run_keys.run_key = runs.run_key
    where not minutes.is_partial
),

series as (
    select
        'series' as set_kind,
        samples.series as set_name,
        samples.run_id,
        'series in ' || files.run_key as comparison_group,
        cast(null as {{ dbt.type_string() }}) as baseline_set_name,
        samples.value
    from {{ ref('dtrace_samples') }} as samples
    inner join {{ ref('stg_raw__files') }} as files
        on samples.file_id = files.file_id
)

select * from throughput
union all
select * from series
