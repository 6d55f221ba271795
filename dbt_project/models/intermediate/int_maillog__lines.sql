{{ config(materialized='view') }}

-- Maillog lines with their run, the run's window, and what each line counts as.
-- Counting follows pflogsumm's definitions so totals can be checked against it; the parser
-- decides per line (`counts_as`, crates/maillog/src/classify.rs):
--   received  = smtpd/postscreen `QUEUEID: client=` and pickup `uid=|sender=` lines
--               (Exim `<=` arrivals, Sendmail `from=` lines)
--   delivered = `status=sent` delivery lines (per recipient), local forwards excluded
--   deferral  = `status=deferred` lines; bounced = `status=bounced` lines
--   rejected  = smtpd/postscreen `reject:` lines and cleanup header/body rejects
-- A view, not a copy of the landing: each per-run reader filters it with
-- `per_run_files_only('file_id')`, whose literal file ids DuckDB pushes through the join into
-- the Parquet scan, so an incremental build reads only the new runs' parts.

with

lines as (
    select * from {{ ref('stg_maillog__lines') }}
),

files as (
    select
        *,
        -- a drain log holds what happened after the run window (settings restored); per
        -- file here, not per line after the join
        lower(path) like '%drain%' as is_drain_file
    from {{ ref('int_file_runs') }}
),

windows as (
    select
        run_key,
        coalesce(monitor_start_utc, start_utc) as window_start,
        coalesce(monitor_end_utc, end_utc) as window_end,
        start_utc as load_start,
        end_utc as load_end
    from {{ ref('stg_raw__runs') }}
),

classified as (
    select
        files.run_id,
        files.path,
        files.is_drain_file,
        windows.window_start,
        windows.window_end,
        lines.*,
        -- what the line counts as: the parser's one definition (crates/maillog, classify.rs);
        -- NULL and false count alike in every reader
        lines.counts_as = 'received' as is_received,
        lines.counts_as = 'delivered' as is_delivered,
        lines.counts_as = 'deferred' as is_deferral,
        lines.counts_as = 'bounced' as is_bounced,
        lines.counts_as = 'expired' as is_expired,
        lines.counts_as = 'rejected' as is_rejected
    from lines
    inner join files
        on lines.file_id = files.file_id
    left join windows
        on files.run_key = windows.run_key
),

final as (
    select
        *,
        {{ dbt.date_trunc('minute', 'logged_at') }} as minute_at,
        coalesce(logged_at between window_start and window_end, not is_drain_file) as in_window
    from classified
)

select * from final
