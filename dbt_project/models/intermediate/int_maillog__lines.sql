{{ config(materialized='view') }}

-- Maillog lines with their run, the run's window, and what each line counts as.
-- Counting follows pflogsumm's definitions so totals can be checked against it:
--   received  = smtpd/postscreen `QUEUEID: client=` and pickup `uid=|sender=` lines
--               (Exim `<=` arrivals, Sendmail `from=` lines)
--   delivered = `status=sent` delivery lines (per recipient), local forwards excluded
--   deferral  = `status=deferred` lines; bounced = `status=bounced` lines
--   rejected  = smtpd/postscreen `reject:` lines and cleanup header/body rejects
-- A view, not a copy of the landing (issue 18, "Scale"): each per-run reader filters it with
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
        -- by kind first: the daemon (a regex over the program, inlined: as the staging
        -- model's column DuckDB computes it for every line) and the status text's LIKE are
        -- computed only for the lines of the kinds they decide, 3-4x cheaper over every line
        -- than one boolean expression, which a projection evaluates whole (issue 18,
        -- "Scale"); NULL and false count alike in every reader
        case
            when lines.kind = 'client' then
                lines.pid is not null and {{ postfix_daemon('lines.program') }} in ('smtpd', 'postscreen')
            when lines.kind = 'pickup' then
                lines.queue_id is not null and {{ postfix_daemon('lines.program') }} = 'pickup'
            when lines.kind = 'arrival' then true
            when lines.kind = 'from' then lines.program in ('sendmail', 'sm-mta')
            when lines.kind is not null then false
        end as is_received,
        case
            when lines.kind = 'delivery' then
                lines.status = 'sent' and coalesce(lines.status_text not like '%forwarded as %', true)
            when lines.kind is not null then false
        end as is_delivered,
        lines.kind = 'delivery' and lines.status = 'deferred' as is_deferral,
        lines.kind = 'delivery' and lines.status = 'bounced' as is_bounced,
        lines.kind = 'expired' or (lines.kind = 'delivery' and lines.status = 'expired') as is_expired,
        case
            when lines.kind = 'reject' then
                not {{ is_postfix('lines.program') }}
                or (
                    {{ postfix_daemon('lines.program') }} in ('smtpd', 'postscreen')
                    and lines.reject_action = 'reject'
                )
                or (
                    {{ postfix_daemon('lines.program') }} = 'cleanup'
                    and lines.reject_stage in ('header', 'body', 'END-OF-MESSAGE')
                )
            when lines.kind is not null then false
        end as is_rejected
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
