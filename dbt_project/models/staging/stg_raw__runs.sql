with

source as (
    select * from {{ source('raw', 'runs') }}
),

renamed as (
    select
        run_key,
        run_id as folder_run_id,
        source_kind,
        has_manifest,
        manifest_error,
        inferred,
        label,
        tags_json as tags,
        timezone,
        utc_offset_minutes,
        run_date,
        start_utc,
        end_utc,
        monitor_start_utc,
        monitor_end_utc,
        queue_drained_utc,
        duration_s,
        load_exit_code,
        hostname,
        group_name,
        baseline_run_id,
        tool_name as tool,
        tool_version,
        tool_command,
        mta_name as mta,
        mta_version,
        settings_json as settings,
        notes
    from source
)

select * from renamed
