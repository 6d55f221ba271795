{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}, {{ ref('stg_raw__files') }}

-- pflogsumm's totals over each run's maillog (the drain log kept apart), and the
-- injection/delivery balance inside the load window: one row per run, built per run so the
-- cross-run `runs` mart reads this instead of every line.

with

lines as (
    select
        run_id,
        queue_id,
        logged_at,
        is_drain_file,
        is_received,
        is_delivered,
        is_deferral,
        is_bounced,
        is_rejected
    from {{ ref('int_maillog__lines') }}
    where {{ per_run_files_only('file_id') }}
        -- the kinds a total counts; the scan skips the rest (connections, queue manager
        -- lines, ...): 24 s against 14 s at 236x the samples
        and kind in ('client', 'pickup', 'arrival', 'from', 'delivery', 'reject')
),

-- every run with maillog lines gets its row (zeros where no line counts), as when every
-- line was read: the runs of the files with parsed maillog lines
maillog_runs as (
    select distinct file_runs.run_id
    from {{ ref('int_file_runs') }} as file_runs
    inner join {{ ref('stg_raw__files') }} as files
        on file_runs.file_id = files.file_id
    where files.format = 'maillog'
        and files.lines_parsed > 0
        and {{ per_run_files_only('file_runs.file_id') }}
),

folders as (
    select * from {{ ref('stg_raw__runs') }}
),

-- smtp-source's load window, where it ran
smtp_source as (
    select * from {{ ref('int_smtp_source__runs') }}
),

mail_lines as (
    select
        lines.*,
        coalesce(smtp_source.load_start, folders.start_utc) as load_start,
        coalesce(smtp_source.load_end, folders.end_utc) as load_end
    from lines
    inner join {{ ref('int_folder_runs') }} as fr on lines.run_id = fr.run_id
    inner join folders on fr.run_key = folders.run_key
    left join smtp_source on lines.run_id = smtp_source.run_id
),

totals as (
    select
        run_id,
        count(case when is_received and not is_drain_file then 1 end) as received,
        count(case when is_delivered and not is_drain_file then 1 end) as delivered,
        count(distinct case when is_deferral and not is_drain_file then queue_id end) as deferred,
        count(case when is_bounced and not is_drain_file then 1 end) as bounced,
        count(case when is_rejected and not is_drain_file then 1 end) as rejected,
        count(case when is_delivered then 1 end) as delivered_incl_drain,
        max(case when is_delivered then logged_at end) as last_delivery_at,
        count(case when is_received and logged_at between load_start and load_end then 1 end)
            as received_during_load,
        count(case when is_delivered and logged_at between load_start and load_end then 1 end)
            as delivered_during_load
    from mail_lines
    group by run_id
),

final as (
    select
        maillog_runs.run_id,
        coalesce(totals.received, 0) as received,
        coalesce(totals.delivered, 0) as delivered,
        coalesce(totals.deferred, 0) as deferred,
        coalesce(totals.bounced, 0) as bounced,
        coalesce(totals.rejected, 0) as rejected,
        coalesce(totals.delivered_incl_drain, 0) as delivered_incl_drain,
        totals.last_delivery_at,
        coalesce(totals.received_during_load, 0) as received_during_load,
        coalesce(totals.delivered_during_load, 0) as delivered_during_load
    from maillog_runs
    left join totals
        on maillog_runs.run_id = totals.run_id
)

select * from final
