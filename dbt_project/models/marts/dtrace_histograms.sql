-- DTrace quantize/lquantize/llquantize and bpftrace histogram buckets.

with

final as (
    select
        runs.run_id,
        regexp_replace(files.path, '^.*/', '') as source_file,
        h.block_index,
        h.tool,
        h.kind,
        h.aggregation,
        h.aggregation_key,
        h.bucket_index,
        h.bucket_label,
        h.bucket_low,
        h.bucket_high,
        h.count,
        h.file_id,
        h.line_no
    from {{ ref('stg_dtrace__histograms') }} as h
    inner join {{ ref('stg_raw__files') }} as files
        on h.file_id = files.file_id
    inner join {{ ref('int_folder_runs') }} as runs
        on files.run_key = runs.run_key
)

select * from final
