{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}, {{ ref('stg_maillog__minutes') }}

-- Maillog counts per run-minute (all of the run's maillog files, drain included).
-- The counts add up across files: the ingest's derive step computed each file's counts per minute
-- (raw.maillog_minutes, ingest/maillog_minutes.py), summed here per run; grouping every line
-- of the archive took 33 s of a full build at 236x the samples (issue 18, "Scale"). The lines
-- of the other files (and every file on the Parquet landing and Spark) are counted here.

with

line_counts as (
    select
        run_id,
        minute_at,
        is_drain_file,
        count(*) as lines,
        count(case when is_received then 1 end) as received,
        count(case when is_delivered then 1 end) as delivered,
        count(case when is_deferral then 1 end) as deferred,
        count(case when is_bounced then 1 end) as bounced,
        count(case when is_rejected then 1 end) as rejected
    from {{ ref('int_maillog__lines') }}
    where logged_at is not null
        and {{ per_run_files_only('file_id') }}
        and {{ maillog_files_without('maillog_minutes', 'file_id') }}
    group by run_id, minute_at, is_drain_file
),

{% if use_landed_maillog() -%}
landed_counts as (
    select
        file_runs.run_id,
        landed.minute_at,
        -- as int_maillog__lines marks a drain log
        lower(file_runs.path) like '%drain%' as is_drain_file,
        landed.lines,
        landed.received,
        landed.delivered,
        landed.deferred,
        landed.bounced,
        landed.rejected
    from (
        select *
        from {{ ref('stg_maillog__minutes') }}
        where {{ per_run_files_only('file_id') }}
    ) as landed
    inner join {{ ref('int_file_runs') }} as file_runs
        on landed.file_id = file_runs.file_id
),
{%- endif %}

counts as (
    select * from line_counts
    {%- if use_landed_maillog() %}
    union all
    select * from landed_counts
    {%- endif %}
),

final as (
    select
        run_id,
        minute_at,
        cast(sum(received) as bigint) as received,
        cast(sum(delivered) as bigint) as delivered,
        cast(sum(deferred) as bigint) as deferred,
        cast(sum(bounced) as bigint) as bounced,
        cast(sum(rejected) as bigint) as rejected,
        bool_or(is_drain_file) as from_drain_log
    from counts
    group by run_id, minute_at
)

select * from final
