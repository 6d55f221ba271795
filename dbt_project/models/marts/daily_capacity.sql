{{ config(**per_run_config(folders=true)) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- How many messages a day a configuration could carry at each observed rate
-- (seed 000: 4,000/min is about 5.76 M/day). Injection rates use full minutes only.
-- A run whose queue grew could not carry its injection rate for a day: for it the
-- delivery rate is the sustainable figure. Growth below 1 % of the injection rate is
-- messages in flight when the load stopped, not a growing queue.
-- Confidence (var capacity_confidence): a t-interval on the mean full-minute rate
-- (ministat's t table) and an exact order-statistic interval for the median (binomial
-- ranks, seeds/median_ci_ranks.csv) instead of a bootstrap: the same answer on both
-- engines, no random numbers. A run with fewer than capacity_min_full_minutes full minutes
-- (or, without per-minute rows, a load shorter than that) is `short`: its rate is one or two
-- minutes' luck, or an extrapolation from seconds.
-- The mailbox side (POP3/IMAP retrievals from the server's log, docs/mailbox.md):
-- sustained = the median of the full minutes inside the load window, × minutes per day.
-- A run whose load generator output had lines quarantined (garbled rows, a crash message) is
-- `partial`: its rates come from the rows that survived, so no dashboard extrapolates them.

with

runs as (
    select * from {{ ref('runs') }}
    where (full_minutes > 0 or delivered_msgs_per_min is not null or sustained_retrievals_per_min is not null)
        and {{ per_run_folders_only('run_id') }}
),

load_quarantine as (
    select
        run_key,
        cast(sum(lines_quarantined) as bigint) as load_lines_quarantined
    from {{ ref('stg_raw__files') }}
    where format in ('postal', 'smtp_source')
        and lines_quarantined > 0
    group by run_key
),

full_minutes as (
    select
        run_id,
        cast(messages as double) as rate,
        row_number() over (partition by run_id order by messages, minute_at) as rank_in_run,
        count(*) over (partition by run_id) as n
    from {{ ref('minutes') }}
    where has_load_row
        and not is_partial
        and messages is not null
        and {{ per_run_folders_only('run_id') }}
),

moments as (
    select
        run_id,
        count(*) as n,
        avg(rate) as mean_rate,
        stddev_samp(rate) as stddev_rate
    from full_minutes
    group by run_id
),

t_table as (
    select * from {{ ref('student_t') }}
    where confidence = {{ var('capacity_confidence') }}
),

t_interval as (
    select
        moments.run_id,
        moments.n,
        moments.mean_rate,
        moments.stddev_rate,
        t_table.t * moments.stddev_rate / sqrt(moments.n) as mean_margin
    from moments
    left join t_table
        on t_table.df = case when moments.n - 1 > 100 then 0 else moments.n - 1 end
        and moments.n >= 2
),

ranks as (
    select * from {{ ref('median_ci_ranks') }}
    where confidence = {{ var('capacity_confidence') }}
),

median_interval as (
    select
        full_minutes.run_id,
        max(ranks.coverage) as median_ci_coverage,
        max(case when full_minutes.rank_in_run = ranks.lower_rank then full_minutes.rate end) as median_ci_low,
        max(case when full_minutes.rank_in_run = full_minutes.n + 1 - ranks.lower_rank then full_minutes.rate end)
            as median_ci_high
    from full_minutes
    inner join ranks
        on full_minutes.n = ranks.n
    group by full_minutes.run_id
),

classified as (
    select
        runs.*,
        t_interval.mean_rate,
        t_interval.stddev_rate,
        t_interval.mean_margin,
        median_interval.median_ci_low,
        median_interval.median_ci_high,
        median_interval.median_ci_coverage,
        load_quarantine.load_lines_quarantined,
        case
            when load_quarantine.load_lines_quarantined > 0 then 'partial'
            when runs.full_minutes >= {{ var('capacity_min_full_minutes') }} then 'ok'
            when runs.full_minutes = 0
                and runs.time_to_deliver_s >= 60 * {{ var('capacity_min_full_minutes') }} then 'ok'
            else 'short'
        end as capacity_status,
        runs.queue_growth_per_min > 0.01 * runs.injected_msgs_per_min as queue_grew
    from runs
    left join t_interval
        on runs.run_id = t_interval.run_id
    left join median_interval
        on runs.run_id = median_interval.run_id
    left join load_quarantine
        on runs.run_key = load_quarantine.run_key
),

final as (
    select
        run_id,
        label,
        settings,
        tool,
        mta,
        full_minutes as minutes_used,
        capacity_status,
        case
            when capacity_status = 'partial'
                then 'load generator output damaged: '
                    || cast(load_lines_quarantined as {{ dbt.type_string() }}) || ' line(s) quarantined'
            when capacity_status = 'ok' and full_minutes > 0
                then cast(full_minutes as {{ dbt.type_string() }}) || ' full minutes'
            when capacity_status = 'short' and full_minutes = 0 and delivered_msgs_per_min is null
                then 'no SMTP side: mailbox retrievals only'
            when capacity_status = 'ok'
                then 'no per-minute rows: delivery over ' || cast(cast(round(time_to_deliver_s) as bigint) as {{ dbt.type_string() }}) || ' s'
            when full_minutes > 0
                then 'too short: ' || cast(full_minutes as {{ dbt.type_string() }})
                    || ' full minute(s), fewer than {{ var("capacity_min_full_minutes") }}'
            else 'too short: no full minute, delivery over '
                || coalesce(cast(cast(round(time_to_deliver_s) as bigint) as {{ dbt.type_string() }}), '?')
                || ' s (under {{ var("capacity_min_full_minutes") }} min) extrapolated to a day'
        end as capacity_basis,
        peak_msgs_per_min,
        sustained_msgs_per_min,
        p10_msgs_per_min,
        delivered_msgs_per_min,
        injected_msgs_per_min,
        queue_growth_per_min,
        {{ var('capacity_confidence') }} as confidence,
        round(mean_rate, 2) as mean_msgs_per_min,
        round(stddev_rate, 2) as stddev_msgs_per_min,
        round(mean_rate - mean_margin, 2) as mean_ci_low_msgs_per_min,
        round(mean_rate + mean_margin, 2) as mean_ci_high_msgs_per_min,
        median_ci_low as median_ci_low_msgs_per_min,
        median_ci_high as median_ci_high_msgs_per_min,
        median_ci_coverage,
        case
            when full_minutes < 2 then 'no interval: fewer than 2 full minutes'
            when median_ci_low is null then 'no median interval: too few full minutes for this confidence'
            else 't-interval on the mean; exact order-statistic (binomial) interval on the median'
        end as interval_note,
        {{ var('minutes_per_day') }} as minutes_per_day,
        -- a day's worth of one or two minutes' luck is no figure: short runs have none
        {%- for name, rate in [
            ('peak_msgs_per_day', 'peak_msgs_per_min'),
            ('sustained_msgs_per_day', 'sustained_msgs_per_min'),
            ('p10_msgs_per_day', 'p10_msgs_per_min'),
            ('delivered_msgs_per_day', 'delivered_msgs_per_min'),
            ('mean_ci_low_msgs_per_day', 'mean_rate - mean_margin'),
            ('mean_ci_high_msgs_per_day', 'mean_rate + mean_margin'),
            ('median_ci_low_msgs_per_day', 'median_ci_low'),
            ('median_ci_high_msgs_per_day', 'median_ci_high'),
        ] %}
        case when capacity_status = 'ok'
            then cast(round(({{ rate }}) * {{ var('minutes_per_day') }}) as {{ dbt.type_bigint() }}) end as {{ name }},
        {%- endfor %}
        case when capacity_status = 'ok' then cast(round(
            case
                when queue_grew then delivered_msgs_per_min
                else coalesce(sustained_msgs_per_min, delivered_msgs_per_min)
            end * {{ var('minutes_per_day') }}
        ) as {{ dbt.type_bigint() }}) end as capacity_msgs_per_day,
        case
            when capacity_status = 'short' then 'none: too short for a daily figure'
            when queue_grew then 'delivery (the queue grew during the run)'
            when sustained_msgs_per_min is not null then 'injection (median full minute)'
            else 'delivery (no full injection minute)'
        end as capacity_rate_source,
        -- what limited the run; a generator-bound rate is a lower bound of the MTA's capacity
        case
            when generator_bound then 'generator'
            when saturation_events > 0 or queue_grew then 'mta_saturation'
            when error_rate >= 0.01 then 'errors'
            else 'none'
        end as bound_by,
        case
            when generator_bound then
                cast(minutes_at_cap as {{ dbt.type_string() }}) || ' of ' || cast(full_minutes as {{ dbt.type_string() }})
                || ' full minutes at >= {{ 100 - 100 * var("generator_cap_tolerance") }} % of the load generator cap (-r '
                || cast(rate_cap_per_min as {{ dbt.type_string() }}) || '/min): capacity is a lower bound'
            when saturation_events > 0 then
                cast(saturation_events as {{ dbt.type_string() }}) || ' saturation event(s); first at minute '
                || cast(saturation_minute_offset as {{ dbt.type_string() }}) || ', rate before '
                || cast(cast(round(rate_before_saturation) as bigint) as {{ dbt.type_string() }}) || '/min'
            when queue_grew then
                'queue grew ' || cast(cast(round(queue_growth_per_min) as bigint) as {{ dbt.type_string() }})
                || ' msgs/min while the load ran'
            when error_rate >= 0.01 then
                'error rate ' || cast(round(100 * error_rate, 1) as {{ dbt.type_string() }}) || ' %'
            else 'no cap reached, no saturation event, no queue growth, error rate under 1 %'
        end as bound_evidence,
        rate_cap_per_min,
        minutes_at_cap,
        mailbox_full_minutes,
        peak_retrievals_per_min,
        sustained_retrievals_per_min,
        cast(round(peak_retrievals_per_min * {{ var('minutes_per_day') }}) as {{ dbt.type_bigint() }})
            as peak_retrievals_per_day,
        cast(round(sustained_retrievals_per_min * {{ var('minutes_per_day') }}) as {{ dbt.type_bigint() }})
            as sustained_retrievals_per_day,
        'injection: load generator per-minute rows; delivery: maillog status=sent' as basis
    from classified
)

select * from final
