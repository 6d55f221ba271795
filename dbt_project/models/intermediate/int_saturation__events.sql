{{ config(**per_run_config(folders=true)) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- Saturation events: minutes where a run's full-minute rate steps down and stays down.
-- Method (README "Saturation events"): for each full minute, the level before is the
-- median of up to `saturation_window` full minutes before it (at least
-- `saturation_min_before`); the minute is a candidate when it and the next
-- `saturation_min_minutes - 1` full minutes all sit at least `saturation_min_drop` below
-- that level. Consecutive candidates merge into one event that starts at the first. The
-- event lasts until a full minute is back at `saturation_recovery` of the level before
-- (recovered) or the run ends (not recovered). A later step down while the rate is still
-- low is its own event, measured against the lowered level.
-- Medians resist single-minute dips and spikes; requiring several consecutive low minutes
-- keeps one bad minute (errors, a late row) from counting.

with

full_minutes as (
    select
        run_id,
        minute_at,
        minute_offset,
        clock_label,
        cast(messages as double) as rate,
        row_number() over (partition by run_id order by minute_at) as i,
        count(*) over (partition by run_id) as n_full
    from {{ ref('minutes') }}
    where has_load_row
        and not is_partial
        and messages is not null
        and {{ per_run_folders_only('run_id') }}
),

before as (
    select
        cur.run_id,
        cur.i,
        {{ percentile_cont('prev.rate', 0.5) }} as level_before,
        count(*) as minutes_before
    from full_minutes as cur
    inner join full_minutes as prev
        on cur.run_id = prev.run_id
        and prev.i between cur.i - {{ var('saturation_window') }} and cur.i - 1
    group by cur.run_id, cur.i
),

ahead as (
    select
        *,
        max(rate) over (
            partition by run_id order by i
            rows between current row and {{ var('saturation_min_minutes') - 1 }} following
        ) as max_rate_ahead,
        count(*) over (
            partition by run_id order by i
            rows between current row and {{ var('saturation_min_minutes') - 1 }} following
        ) as minutes_ahead
    from full_minutes
),

candidates as (
    select
        ahead.*,
        before.level_before,
        ahead.i - row_number() over (partition by ahead.run_id order by ahead.i) as island
    from ahead
    inner join before
        on ahead.run_id = before.run_id and ahead.i = before.i
    where before.minutes_before >= {{ var('saturation_min_before') }}
        and ahead.minutes_ahead = {{ var('saturation_min_minutes') }}
        and ahead.max_rate_ahead <= (1 - {{ var('saturation_min_drop') }}) * before.level_before
),

starts as (
    select
        run_id,
        island,
        min(i) as start_i
    from candidates
    group by run_id, island
),

events as (
    select
        candidates.run_id,
        candidates.i as start_i,
        candidates.minute_at as start_minute_at,
        candidates.minute_offset as start_minute_offset,
        candidates.clock_label as start_clock_label,
        candidates.level_before,
        candidates.n_full,
        row_number() over (partition by candidates.run_id order by candidates.i) as event_no
    from candidates
    inner join starts
        on candidates.run_id = starts.run_id and candidates.i = starts.start_i
),

recovery as (
    select
        events.run_id,
        events.event_no,
        min(fm.i) as recovered_i
    from events
    inner join full_minutes as fm
        on events.run_id = fm.run_id
        and fm.i > events.start_i
        and fm.rate >= {{ var('saturation_recovery') }} * events.level_before
    group by events.run_id, events.event_no
),

spans as (
    select
        events.*,
        recovery.recovered_i is not null as recovered,
        coalesce(recovery.recovered_i, events.n_full + 1) - events.start_i as duration_minutes
    from events
    left join recovery
        on events.run_id = recovery.run_id and events.event_no = recovery.event_no
),

-- the level after: median of the event's first minutes (at most one window)
after as (
    select
        spans.run_id,
        spans.event_no,
        {{ percentile_cont('fm.rate', 0.5) }} as level_after,
        max(fm.minute_at) as level_after_until
    from spans
    inner join full_minutes as fm
        on spans.run_id = fm.run_id
        and fm.i >= spans.start_i
        and fm.i < spans.start_i + least(spans.duration_minutes, {{ var('saturation_window') }})
    group by spans.run_id, spans.event_no
),

final as (
    select
        spans.run_id,
        spans.event_no,
        spans.start_minute_at,
        spans.start_minute_offset,
        spans.start_clock_label,
        spans.level_before,
        after.level_after,
        100.0 * (1 - after.level_after / spans.level_before) as drop_pct,
        spans.duration_minutes,
        spans.recovered,
        {{ add_minutes('spans.start_minute_at', 'spans.duration_minutes') }} as end_minute_at,
        after.level_after_until
    from spans
    inner join after
        on spans.run_id = after.run_id and spans.event_no = after.event_no
)

select * from final
