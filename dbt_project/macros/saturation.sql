{#
  Saturation events: change points where a run's full-minute rate steps down and stays down.

  saturation_change_points(source_sql) is a whole query over `source_sql`, which must give
  run_id, minute_at, minute_offset, clock_label and rate (one row per full minute). The
  model int_saturation__events calls it on `minutes`; bench/saturation_suite.py compiles
  the same macro with `dbt compile --inline` and runs it on synthetic series, so there is one
  definition of an event.

  Method: the window-sliding search of Truong, Oudre & Vayatis, "Selective review of offline
  change point detection methods", Signal Processing 167 (2020), §5.3, with a robust
  two-window discrepancy and a universal threshold:
  - the series is taken in logs, so a step is a relative drop and the noise is relative;
  - noise: sigma = 1.4826 x median |y(i) - y(i-1)| / sqrt(2), the MAD of first differences
    (Hampel's robust scale on the differenced series, as in Fryzlewicz's Wild Binary
    Segmentation, Annals of Statistics 42(6), 2014), floored at `saturation_noise_floor`;
  - at every minute t, a window of the `saturation_before_windows` minutes before t is
    compared with a window of `saturation_after_windows` minutes starting after a ramp of
    0..`saturation_max_ramp` minutes (a step spread over several minutes); the discrepancy is
    the difference of the window medians over its standard error,
    z = D / (sigma x sqrt(pi/2 x (1/nb + 1/na))) (a median's asymptotic variance);
  - a configuration is a change when z >= sqrt(2 ln(n K)) (Donoho & Johnstone's universal
    threshold over the n minutes and K window configurations tested: the penalty grows with
    what is searched, so a long steady run is not flagged by chance), the drop
    1 - exp(-D) is at least `saturation_min_drop`, the after window starts low and the before
    window ends high ("low" = a quarter of the way down, `saturation_start_fraction`);
  - an after window cut short by the run's end counts when it has
    `saturation_min_after_at_end` minutes, each `saturation_min_drop` below the level before
    (a drop that lasts until the run ends);
  - the event starts at the first minute from which every minute up to the after window is
    low; per start the best-scoring configuration is kept, then peaks: a start is an event
    unless a start within `saturation_separation` minutes scores higher;
  - a longer after window counts only when the shorter ones from the same minute show the
    drop too (the drop persists, and a long window does not reach into a later step); a
    longer before window only when its median is within `saturation_before_agreement` (log)
    of the shortest one's (no earlier step inside it).
  The event lasts until two full minutes in a row (or the run's last) are back at
  `saturation_recovery` x the level before (recovered), or the run ends. bench/saturation_suite.py measures recall, false positives and
  the start error on generated series with known change points.
#}
{% macro saturation_change_points(source_sql) -%}
{%- set before_windows = var('saturation_before_windows') -%}
{%- set after_windows = var('saturation_after_windows') -%}
{%- set configurations = (before_windows | length) * (after_windows | length) * (var('saturation_max_ramp') + 1) -%}
with

full_minutes as (
    select
        run_id,
        minute_at,
        minute_offset,
        clock_label,
        cast(rate as double) as rate,
        ln(greatest(cast(rate as double), 1.0)) as y,
        lead(cast(rate as double)) over (partition by run_id order by minute_at) as next_rate,
        row_number() over (partition by run_id order by minute_at) as i,
        count(*) over (partition by run_id) as n_full
    from ({{ source_sql }}) as source_minutes
),

steps as (
    select
        run_id,
        abs(y - lag(y) over (partition by run_id order by i)) as step
    from full_minutes
),

noise as (
    select
        run_id,
        greatest(
            coalesce(1.4826 * {{ percentile_cont('step', 0.5) }} / sqrt(2.0), 0.0),
            {{ var('saturation_noise_floor') }}
        ) as sigma
    from steps
    group by run_id
),

before_windows as (
    {% for w in before_windows %}
    select {{ w }} as wb{{ ' union all' if not loop.last }}
    {% endfor %}
),

after_windows as (
    {% for w in after_windows %}
    select {{ w }} as wa{{ ' union all' if not loop.last }}
    {% endfor %}
),

ramps as (
    {% for g in range(var('saturation_max_ramp') + 1) %}
    select {{ g }} as ramp{{ ' union all' if not loop.last }}
    {% endfor %}
),

-- window medians: before t (t - wb .. t - 1), and from a0 on (a0 .. a0 + wa - 1)
before as (
    select
        cur.run_id,
        cur.i as t,
        before_windows.wb,
        {{ percentile_cont('prev.y', 0.5) }} as median_y,
        {{ percentile_cont('prev.rate', 0.5) }} as level,
        count(*) as nb
    from full_minutes as cur
    cross join before_windows
    inner join full_minutes as prev
        on cur.run_id = prev.run_id
        and prev.i between cur.i - before_windows.wb and cur.i - 1
    group by cur.run_id, cur.i, before_windows.wb
    having count(*) >= {{ var('saturation_min_before') }}
),

after as (
    select
        cur.run_id,
        cur.i as a0,
        after_windows.wa,
        {{ percentile_cont('nxt.y', 0.5) }} as median_y,
        {{ percentile_cont('nxt.rate', 0.5) }} as level,
        max(nxt.y) as max_y,
        max(nxt.i) as last_i,
        count(*) as na
    from full_minutes as cur
    cross join after_windows
    inner join full_minutes as nxt
        on cur.run_id = nxt.run_id
        and nxt.i between cur.i and cur.i + after_windows.wa - 1
    group by cur.run_id, cur.i, after_windows.wa
),

-- the drop must persist: a longer after window counts only when every shorter one from the
-- same minute is low too (a long window must not reach past a bump into a later step)
after_persisting as (
    select
        *,
        max(case when na = wa then median_y end) over (
            partition by run_id, a0 order by wa rows between unbounded preceding and 1 preceding
        ) as shorter_max_y
    from after
),

-- a longer before window counts only when it agrees with the shortest one (no earlier step
-- inside it, which would lift the level before a second step)
before_agreeing as (
    select before.*
    from before
    inner join before as shortest
        on before.run_id = shortest.run_id
        and before.t = shortest.t
        and shortest.wb = {{ before_windows | min }}
    where before.wb = {{ before_windows | min }}
        or abs(before.median_y - shortest.median_y) <= {{ var('saturation_before_agreement') }}
),

configurations as (
    select
        before.run_id,
        before.t,
        before.wb,
        ramps.ramp,
        after.a0,
        after.wa,
        before.level as level_before,
        after.level as level_after,
        before.median_y - after.median_y as d,
        before.median_y - {{ var('saturation_start_fraction') }} * (before.median_y - after.median_y) as low_y,
        (before.median_y - after.median_y)
            / (noise.sigma * sqrt(1.5707963267948966 * (1.0 / before.nb + 1.0 / after.na))) as z,
        sqrt(2.0 * ln(first_minute.n_full * {{ configurations }})) as threshold,
        after.na,
        after.max_y,
        before.median_y as before_y,
        first_minute.n_full
    from before_agreeing as before
    cross join ramps
    inner join after_persisting as after
        on before.run_id = after.run_id
        and after.a0 = before.t + ramps.ramp
    inner join noise
        on before.run_id = noise.run_id
    inner join full_minutes as first_minute
        on before.run_id = first_minute.run_id
        and first_minute.i = 1
    where (
            after.shorter_max_y is null
            or after.shorter_max_y <= before.median_y + ln(1.0 - {{ var('saturation_min_drop') }})
        )
        and (
        after.na = after.wa
        or (
            after.wa = {{ after_windows | min }}
            and after.last_i = first_minute.n_full
            and after.na >= {{ var('saturation_min_after_at_end') }}
            and after.max_y <= before.median_y + ln(1.0 - {{ var('saturation_min_drop') }})
        )
        )
),

changes as (
    select configurations.*
    from configurations
    inner join full_minutes as at_a0
        on configurations.run_id = at_a0.run_id and at_a0.i = configurations.a0
    inner join full_minutes as before_t
        on configurations.run_id = before_t.run_id and before_t.i = configurations.t - 1
    where configurations.z * {{ var('saturation_threshold_scale') }} >= configurations.threshold
        and 1.0 - exp(-configurations.d) >= {{ var('saturation_min_drop') }}
        and at_a0.y <= configurations.low_y
        and before_t.y > configurations.low_y
),

-- the start: the first minute from which every minute up to the after window is low
last_high as (
    select
        changes.run_id,
        changes.t,
        changes.wb,
        changes.ramp,
        changes.wa,
        max(gap.i) as last_high_i
    from changes
    inner join full_minutes as gap
        on changes.run_id = gap.run_id
        and gap.i between changes.t and changes.a0 - 1
        and gap.y > changes.low_y
    group by changes.run_id, changes.t, changes.wb, changes.ramp, changes.wa
),

starts as (
    select
        changes.*,
        coalesce(last_high.last_high_i + 1, changes.t) as start_i
    from changes
    left join last_high
        on changes.run_id = last_high.run_id
        and changes.t = last_high.t
        and changes.wb = last_high.wb
        and changes.ramp = last_high.ramp
        and changes.wa = last_high.wa
),

best_per_start as (
    select *
    from (
        select
            starts.*,
            row_number() over (
                partition by run_id, start_i
                order by z desc, t, ramp, wb, wa
            ) as rank_at_start
        from starts
    ) as ranked
    where rank_at_start = 1
),

peaks as (
    select best_per_start.*
    from best_per_start
    left join best_per_start as stronger
        on stronger.run_id = best_per_start.run_id
        and stronger.start_i <> best_per_start.start_i
        and abs(stronger.start_i - best_per_start.start_i) <= {{ var('saturation_separation') }}
        and (
            stronger.z > best_per_start.z
            or (stronger.z = best_per_start.z and stronger.start_i < best_per_start.start_i)
        )
    where stronger.run_id is null
),

events as (
    select
        peaks.run_id,
        peaks.start_i,
        full_minutes.minute_at as start_minute_at,
        full_minutes.minute_offset as start_minute_offset,
        full_minutes.clock_label as start_clock_label,
        peaks.level_before,
        peaks.level_after,
        peaks.z as score,
        peaks.threshold as score_threshold,
        peaks.a0,
        peaks.a0 - peaks.start_i as ramp_minutes,
        peaks.n_full,
        row_number() over (partition by peaks.run_id order by peaks.start_i) as event_no
    from peaks
    inner join full_minutes
        on peaks.run_id = full_minutes.run_id and peaks.start_i = full_minutes.i
),

-- recovered: the first minute after the after window's start that is back at
-- `saturation_recovery` x the level before and is not a lone minute (the next one is too,
-- or it is the run's last): one noisy minute inside a low stretch does not end it
recovery as (
    select
        events.run_id,
        events.event_no,
        min(fm.i) as recovered_i
    from events
    inner join full_minutes as fm
        on events.run_id = fm.run_id
        and fm.i > events.a0
        and fm.rate >= {{ var('saturation_recovery') }} * events.level_before
        and (fm.next_rate is null or fm.next_rate >= {{ var('saturation_recovery') }} * events.level_before)
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

-- the minutes the signals are read over: the event's first minutes (at most the longest after window)
signal_minutes as (
    select
        spans.run_id,
        spans.event_no,
        max(fm.minute_at) as level_after_until
    from spans
    inner join full_minutes as fm
        on spans.run_id = fm.run_id
        and fm.i >= spans.start_i
        and fm.i < spans.start_i + least(spans.duration_minutes, {{ after_windows | max }})
    group by spans.run_id, spans.event_no
)

select
    spans.run_id,
    spans.event_no,
    spans.start_minute_at,
    spans.start_minute_offset,
    spans.start_clock_label,
    spans.level_before,
    spans.level_after,
    100.0 * (1 - spans.level_after / spans.level_before) as drop_pct,
    spans.ramp_minutes,
    spans.score,
    spans.score_threshold,
    spans.duration_minutes,
    spans.recovered,
    {{ add_minutes('spans.start_minute_at', 'spans.duration_minutes') }} as end_minute_at,
    signal_minutes.level_after_until
from spans
inner join signal_minutes
    on spans.run_id = signal_minutes.run_id and spans.event_no = signal_minutes.event_no
{%- endmacro %}
