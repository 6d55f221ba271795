-- One row per run: a fingerprint of everything its per-run rows are built from (the run's
-- landed files with their hashes and parser versions, and its run_id and date). The
-- per-run incremental models (macros/per_run.sql) rebuild a run when it changes.

with

files as (
    select
        run_key,
        {{ sorted_string_agg(
            "concat_ws(':', cast(file_id as " ~ dbt.type_string() ~ "), coalesce(sha256, '-'), "
            ~ "coalesce(parser_version, '-'), status)"
        ) }} as files
    from {{ ref('stg_raw__files') }}
    group by run_key
),

runs as (
    select
        folder_runs.run_id,
        concat_ws(
            '|',
            folder_runs.run_key,
            runs.folder_run_id,
            coalesce(cast(runs.run_date as {{ dbt.type_string() }}), '-'),
            coalesce(runs.inferred, '-'),
            coalesce(files.files, '-')
        ) as folder_state
    from {{ ref('int_folder_runs') }} as folder_runs
    inner join {{ ref('stg_raw__runs') }} as runs
        on folder_runs.run_key = runs.run_key
    left join files
        on folder_runs.run_key = files.run_key
),

final as (
    select
        run_id,
        md5({{ sorted_string_agg('folder_state') }}) as fingerprint
    from runs
    group by run_id
)

select * from final
