{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- Sample series (files of one number per line, as fed to ministat), one row per value.
-- The series is named after its file (e.g. queue-read.Priority).

with

values_ as (
    select * from {{ ref('stg_sample_series__values') }}
    where {{ per_run_files_only('file_id') }}
),

files as (
    select * from {{ ref('int_file_runs') }}
),

final as (
    select
        files.run_id,
        regexp_replace(files.path, '^.*/', '') as series,
        values_.seq,
        values_.value,
        -- a unit is known only when the series name says it (…_us, .usec, -ms)
        case
            when {{ regex_match('lower(files.path)', '(usec|[._-]us)([._-]|$)') }} then 'us'
            when {{ regex_match('lower(files.path)', '(msec|[._-]ms)([._-]|$)') }} then 'ms'
            when {{ regex_match('lower(files.path)', '(nsec|[._-]ns)([._-]|$)') }} then 'ns'
        end as unit,
        values_.file_id,
        values_.line_no
    from values_
    inner join files
        on values_.file_id = files.file_id
)

select * from final
