-- One row per benchmark run: a run folder/bundle, or each run found inside its postal output.

with

folders as (
    select * from {{ ref('stg_raw__runs') }}
),

segment_runs as (
    select distinct
        run_key,
        run_id,
        runs_in_folder
    from {{ ref('int_postal__segment_runs') }}
    where not is_detached_stderr
        and side = 'smtp'
),

minutes as (
    select * from {{ ref('int_postal__minutes') }}
),

events as (
    select * from {{ ref('events') }}
),

-- the mailbox side (docs/mailbox.md): the POP3/IMAP server's log per minute, and rabid's rows
mailbox_minutes as (
    select
        mailbox.*,
        -- a full minute lies wholly inside the load window (the log has exact times)
        coalesce(
            mailbox.minute_at >= folders.start_utc
            and {{ add_minutes('mailbox.minute_at', 1) }} <= folders.end_utc,
            false
        ) as is_full
    from {{ ref('int_mailbox__minutes') }} as mailbox
    inner join {{ ref('int_folder_runs') }} as fr on mailbox.run_id = fr.run_id
    inner join folders on fr.run_key = folders.run_key
),

mailbox_stats as (
    select
        run_id,
        cast(sum(mailbox_sessions) as bigint) as mailbox_sessions,
        cast(sum(pop3_sessions) as bigint) as pop3_sessions,
        cast(sum(imap_sessions) as bigint) as imap_sessions,
        cast(sum(mailbox_logins) as bigint) as mailbox_logins,
        cast(sum(mailbox_login_failures) as bigint) as mailbox_login_failures,
        cast(sum(mailbox_disconnects) as bigint) as mailbox_disconnects,
        cast(sum(msgs_retrieved) as bigint) as msgs_retrieved,
        cast(sum(msgs_deleted) as bigint) as msgs_deleted,
        cast(sum(bytes_retrieved) as bigint) as bytes_retrieved,
        cast(sum(zero_byte_sessions) as bigint) as zero_byte_sessions,
        count(case when is_full then 1 end) as mailbox_full_minutes,
        max(case when is_full then msgs_retrieved end) as peak_retrievals_per_min,
        {{ percentile_cont('case when is_full then msgs_retrieved end', 0.5) }} as sustained_retrievals_per_min
    from mailbox_minutes
    group by run_id
),

rabid_stats as (
    select
        run_id,
        cast(sum(messages) as bigint) as rabid_messages,
        cast(sum(data_kb) as bigint) as rabid_data_kb,
        cast(sum(errors) as bigint) as rabid_errors,
        cast(sum(connections) as bigint) as rabid_connections,
        cast(sum(imap_connections) as bigint) as rabid_imap_connections
    from {{ ref('int_rabid__minutes') }}
    group by run_id
),

-- postal/bhm files (the SMTP side): a run whose only load output is rabid's is still valid
smtp_files as (
    select
        run_key,
        count(distinct file_id) as postal_files
    from {{ ref('int_postal__segment_runs') }}
    where side = 'smtp'
    group by run_key
),

files as (
    select * from {{ ref('stg_raw__files') }}
),

smtp_source as (
    select * from {{ ref('int_smtp_source__runs') }}
),

-- pflogsumm's totals per run and the load-window balance, built per run (not every line)
mail_stats as (
    select * from {{ ref('int_maillog__run_stats') }}
),

all_runs as (
    select
        folders.*,
        coalesce(segment_runs.run_id, folders.folder_run_id) as run_id,
        coalesce(segment_runs.runs_in_folder, 1) as runs_in_folder
    from folders
    left join segment_runs
        on folders.run_key = segment_runs.run_key
),

minute_stats as (
    select
        run_id,
        count(*) as minutes,
        count(case when is_partial then null else 1 end) as full_minutes,
        cast(sum(messages) as bigint) as total_messages,
        cast(sum(data_kb) as bigint) as total_kb,
        cast(sum(errors) as bigint) as total_errors,
        cast(sum(connections) as bigint) as total_connections,
        max(case when not is_partial then messages end) as peak_msgs_per_min,
        {{ percentile_cont('case when not is_partial then messages end', 0.5) }} as sustained_msgs_per_min,
        {{ percentile_cont('case when not is_partial then messages end', var('conservative_quantile')) }}
            as p10_msgs_per_min,
        min(minute_at) as first_minute_at,
        max(minute_at) as last_minute_at
    from minutes
    group by run_id
),

-- the load generator's rate cap (postal/rabid/bhm `-r N`, messages per minute; smtp-source
-- has none) and how many full minutes sat at it (within generator_cap_tolerance)
caps as (
    select
        run_id,
        case when tool in ('postal', 'rabid', 'bhm') then
            {{ regex_int('tool_command', '-r[ ]*([0-9]+)') }}
        end as rate_cap_per_min
    from all_runs
),

cap_stats as (
    select
        caps.run_id,
        count(
            case when not minutes.is_partial
                and minutes.messages >= (1 - {{ var('generator_cap_tolerance') }}) * caps.rate_cap_per_min then 1 end
        ) as minutes_at_cap
    from caps
    inner join minutes
        on caps.run_id = minutes.run_id
    where caps.rate_cap_per_min is not null
    group by caps.run_id
),

first_saturation as (
    select * from {{ ref('int_saturation__events') }}
    where event_no = 1
),

saturation_counts as (
    select
        run_id,
        count(*) as saturation_events
    from {{ ref('int_saturation__events') }}
    group by run_id
),

event_stats as (
    select
        run_id,
        count(*) as events
    from events
    group by run_id
),

file_stats as (
    select
        run_key,
        count(*) as files,
        count(case when status = 'error' then 1 end) as files_with_errors,
        cast(sum(coalesce(lines_quarantined, 0)) as bigint) as lines_quarantined,
        count(case when status = 'loaded' and format <> 'manifest' then 1 end) as data_files
    from files
    group by run_key
),

joined as (
    select
        all_runs.*,
        minute_stats.minutes,
        minute_stats.full_minutes,
        minute_stats.total_messages,
        minute_stats.total_kb,
        minute_stats.total_errors,
        minute_stats.total_connections,
        minute_stats.peak_msgs_per_min,
        minute_stats.sustained_msgs_per_min,
        minute_stats.p10_msgs_per_min,
        minute_stats.first_minute_at,
        minute_stats.last_minute_at,
        coalesce(event_stats.events, 0) as events,
        coalesce(file_stats.files, 0) as files,
        coalesce(file_stats.files_with_errors, 0) as files_with_errors,
        coalesce(file_stats.lines_quarantined, 0) as lines_quarantined,
        coalesce(smtp_files.postal_files, 0) as postal_files,
        coalesce(file_stats.data_files, 0) as data_files,
        smtp_source.messages as smtp_source_messages,
        coalesce(smtp_source.load_start, all_runs.start_utc) as load_start,
        coalesce(smtp_source.load_end, all_runs.end_utc) as load_end,
        mail_stats.received,
        mail_stats.delivered,
        mail_stats.deferred,
        mail_stats.bounced,
        mail_stats.rejected,
        mail_stats.delivered_incl_drain,
        mail_stats.last_delivery_at,
        mail_stats.received_during_load,
        mail_stats.delivered_during_load,
        caps.rate_cap_per_min,
        cap_stats.minutes_at_cap,
        first_saturation.start_minute_offset as saturation_minute_offset,
        first_saturation.level_before as rate_before_saturation,
        coalesce(saturation_counts.saturation_events, 0) as saturation_events,
        mailbox_stats.mailbox_sessions,
        mailbox_stats.pop3_sessions,
        mailbox_stats.imap_sessions,
        mailbox_stats.mailbox_logins,
        mailbox_stats.mailbox_login_failures,
        mailbox_stats.mailbox_disconnects,
        mailbox_stats.msgs_retrieved,
        mailbox_stats.msgs_deleted,
        mailbox_stats.bytes_retrieved,
        mailbox_stats.zero_byte_sessions,
        coalesce(mailbox_stats.mailbox_full_minutes, 0) as mailbox_full_minutes,
        mailbox_stats.peak_retrievals_per_min,
        mailbox_stats.sustained_retrievals_per_min,
        rabid_stats.rabid_messages,
        rabid_stats.rabid_data_kb,
        rabid_stats.rabid_errors,
        rabid_stats.rabid_connections,
        rabid_stats.rabid_imap_connections
    from all_runs
    left join minute_stats
        on all_runs.run_id = minute_stats.run_id
    left join event_stats
        on all_runs.run_id = event_stats.run_id
    left join file_stats
        on all_runs.run_key = file_stats.run_key
    left join smtp_files
        on all_runs.run_key = smtp_files.run_key
    left join mailbox_stats
        on all_runs.run_id = mailbox_stats.run_id
    left join rabid_stats
        on all_runs.run_id = rabid_stats.run_id
    left join smtp_source
        on all_runs.run_id = smtp_source.run_id
    left join mail_stats
        on all_runs.run_id = mail_stats.run_id
    left join caps
        on all_runs.run_id = caps.run_id
    left join cap_stats
        on all_runs.run_id = cap_stats.run_id
    left join first_saturation
        on all_runs.run_id = first_saturation.run_id
    left join saturation_counts
        on all_runs.run_id = saturation_counts.run_id
),

timed as (
    select
        *,
        -- seed 001: time to inject = load start -> load end; time to deliver = load start -> last delivery
        case when runs_in_folder = 1 then
            {{ epoch_seconds('load_end') }} - {{ epoch_seconds('load_start') }}
        end as time_to_inject_s,
        case when runs_in_folder = 1 then
            {{ epoch_seconds('last_delivery_at') }} - {{ epoch_seconds('load_start') }}
        end as time_to_deliver_s
    from joined
),

final as (
    select
        run_id,
        run_key,
        label,
        tool,
        tool_version,
        mta,
        mta_version,
        settings,
        tags,
        timezone,
        case when runs_in_folder = 1 and start_utc is not null then start_utc
            else first_minute_at end as started_at,
        case when runs_in_folder = 1 and end_utc is not null then end_utc
            else {{ add_minutes('last_minute_at', 1) }} end as ended_at,
        coalesce(minutes, 0) as minutes,
        coalesce(full_minutes, 0) as full_minutes,
        coalesce(total_messages, smtp_source_messages, 0) as total_messages,
        coalesce(total_kb, 0) as total_kb,
        coalesce(total_errors, 0) as total_errors,
        coalesce(total_connections, 0) as total_connections,
        peak_msgs_per_min,
        sustained_msgs_per_min,
        round(p10_msgs_per_min, 2) as p10_msgs_per_min,
        -- share of attempted messages that failed, a fraction (0.01 = 1 %)
        round(cast(total_errors as double) / nullif(total_messages + total_errors, 0), 6) as error_rate,
        events,
        received,
        delivered,
        deferred,
        bounced,
        rejected,
        delivered_incl_drain,
        time_to_inject_s,
        time_to_deliver_s,
        -- seed 001: throughput = messages delivered / time to deliver
        round(60.0 * delivered_incl_drain / nullif(time_to_deliver_s, 0), 2) as delivered_msgs_per_min,
        round(60.0 * received_during_load / nullif(time_to_inject_s, 0), 2) as injected_msgs_per_min,
        -- injection minus delivery while the load ran, when positive: the queue grows
        round(greatest(60.0 * (received_during_load - delivered_during_load) / nullif(time_to_inject_s, 0), 0), 2)
            as queue_growth_per_min,
        case
            when postal_files > 0 and coalesce(minutes, 0) = 0 then 'failed'
            when data_files = 0 then 'failed'
            when files_with_errors > 0 or lines_quarantined > 0 or (minutes > 0 and full_minutes = 0)
                then 'partial'
            else 'ok'
        end as status,
        case
            when postal_files > 0 and coalesce(minutes, 0) = 0 and inferred like '%no date:%'
                then 'no date: no run.toml date or start_utc and no stamp with a year in its files, so its per-minute rows cannot be placed in time'
            when postal_files > 0 and coalesce(minutes, 0) = 0
                then 'load generator printed no per-minute rows (' || cast(events as {{ dbt.type_string() }}) || ' events)'
            when data_files = 0 then 'no data file could be loaded'
            when files_with_errors > 0 then cast(files_with_errors as {{ dbt.type_string() }}) || ' file(s) failed to load'
            when lines_quarantined > 0 then cast(lines_quarantined as {{ dbt.type_string() }}) || ' line(s) quarantined'
            when minutes > 0 and full_minutes = 0 then 'no full minute recorded'
        end as status_reason,
        rate_cap_per_min,
        coalesce(minutes_at_cap, 0) as minutes_at_cap,
        -- at least half the full minutes at the generator's cap: the MTA was not the limit
        coalesce(rate_cap_per_min is not null and full_minutes > 0 and 2 * minutes_at_cap >= full_minutes, false)
            as generator_bound,
        saturation_events,
        saturation_minute_offset,
        rate_before_saturation,
        has_manifest,
        inferred,
        load_exit_code,
        notes,
        mailbox_sessions,
        pop3_sessions,
        imap_sessions,
        mailbox_logins,
        mailbox_login_failures,
        mailbox_disconnects,
        msgs_retrieved,
        msgs_deleted,
        bytes_retrieved,
        zero_byte_sessions,
        mailbox_full_minutes,
        peak_retrievals_per_min,
        sustained_retrievals_per_min,
        rabid_messages,
        rabid_data_kb,
        rabid_errors,
        rabid_connections,
        rabid_imap_connections
    from timed
)

select * from final
