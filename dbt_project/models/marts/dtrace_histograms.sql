{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- DTrace quantize/lquantize/llquantize and bpftrace histogram buckets.

with

final as (
    select
        files.run_id,
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
    inner join {{ ref('int_file_runs') }} as files
        on h.file_id = files.file_id
    where {{ per_run_files_only('h.file_id') }}
)

select * from final
