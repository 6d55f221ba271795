-- Which run each postal segment belongs to, and where its clock labels sit in time.
--
-- A folder with one segment keeps the folder's run_id; a folder whose postal output
-- holds several runs (prompts, headers, clock jumps) gets run_id#1, #2, ... in file order.
-- A stderr-only file beside a file with rows (postal.err next to postal.out) belongs to
-- the folder's first run, with no minute of its own.
--
-- Each segment has a side: `mailbox` for rabid's output (the POP/IMAP client of the same
-- package: its header has `IMAP connections`, or its file is named rabid*), `smtp` for
-- postal/bhm. The sides are numbered and placed apart, so rabid.csv beside postal.csv is the
-- same run's mailbox side, not a second run.

with

segments as (
    select
        seg.*,
        f.run_key,
        f.path,
        case
            when coalesce(seg.header, '') like '%IMAP%'
                or {{ regex_match('lower(f.path)', '(^|/)rabid[^/]*$') }} then 'mailbox'
            else 'smtp'
        end as side
    from {{ ref('stg_postal__segments') }} as seg
    inner join {{ ref('stg_raw__files') }} as f
        on seg.file_id = f.file_id
    where f.status = 'loaded'
),

row_span as (
    select
        file_id,
        segment,
        max(minute_index) as last_minute_index,
        max(case when row_seq = 1 then clock_minute end) as first_clock,
        max_by(clock_minute, row_seq) as last_clock
    from {{ ref('stg_postal__rows') }}
    group by file_id, segment
),

with_totals as (
    select
        segments.*,
        row_span.last_minute_index,
        row_span.first_clock,
        row_span.last_clock,
        sum(segments.n_rows) over (partition by segments.file_id) as file_rows,
        sum(segments.n_rows) over (partition by segments.run_key, segments.side) as folder_rows
    from segments
    left join row_span
        on segments.file_id = row_span.file_id
        and segments.segment = row_span.segment
),

classified as (
    select
        *,
        (file_rows = 0 and folder_rows > 0) as is_detached_stderr
    from with_totals
),

numbered as (
    select
        *,
        row_number() over (partition by run_key, side order by path, segment) as run_seq,
        count(*) over (partition by run_key, side) as runs_in_folder
    from classified
    where not is_detached_stderr
),

-- Minutes from the first segment's first label to each segment's first label:
-- each later segment starts at the first clock at or after the previous one's end.
sequenced as (
    select
        *,
        case
            when run_seq = 1 or first_clock is null then 0
            else (first_clock - lag(last_clock) over (partition by run_key, side order by run_seq) + 1440) % 1440
        end as advance,
        coalesce(lag(last_minute_index) over (partition by run_key, side order by run_seq), 0) as prev_span
    from numbered
),

placed as (
    select
        *,
        sum(case when run_seq = 1 then 0 else advance + prev_span end)
            over (partition by run_key, side order by run_seq rows between unbounded preceding and current row)
            as minutes_after_first,
        -- the first segment that printed rows anchors the folder's clock
        first_value(first_clock) over (
            partition by run_key, side
            order by case when first_clock is null then 1 else 0 end, run_seq
        ) as folder_first_clock
    from sequenced
),

runs as (
    select * from {{ ref('stg_raw__runs') }}
),

-- Local calendar day of the folder's first label: the manifest date, or the day of the
-- load start (moved by a day when the first label is nearer the previous/next midnight).
anchored as (
    select
        placed.*,
        runs.folder_run_id,
        runs.utc_offset_minutes,
        case
            when runs.start_utc is not null then
                cast(cast({{ add_minutes('runs.start_utc', 'runs.utc_offset_minutes') }} as date) as timestamp)
            else cast(runs.run_date as timestamp)
        end as anchor_day,
        case
            when runs.start_utc is not null then
                {{ add_minutes('runs.start_utc', 'runs.utc_offset_minutes') }}
        end as start_local,
        runs.start_utc as load_start_utc
    from placed
    inner join runs
        on placed.run_key = runs.run_key
),

resolved as (
    select
        *,
        {{ add_minutes('anchor_day', 'folder_first_clock') }} as naive_first_label
    from anchored
),

final as (
    select
        file_id,
        segment,
        run_key,
        side,
        case when runs_in_folder = 1 then folder_run_id
            else folder_run_id || '#' || cast(run_seq as {{ dbt.type_string() }}) end as run_id,
        run_seq,
        runs_in_folder,
        started_by,
        n_rows,
        n_events,
        first_clock,
        utc_offset_minutes,
        -- UTC time of this segment's first label (the end of its first, partial minute)
        {{ add_minutes(
            'naive_first_label',
            'minutes_after_first - utc_offset_minutes
             + case
                 when start_local is null then 0
                 when ' ~ dbt.datediff('start_local', 'naive_first_label', 'minute') ~ ' > 720 then -1440
                 when ' ~ dbt.datediff('start_local', 'naive_first_label', 'minute') ~ ' < -720 then 1440
                 else 0
               end'
        ) }} as first_label_utc,
        load_start_utc
    from resolved
),

-- postal labels a row with the clock at the end of its minute, so the first row is partial
-- unless the load began within `postal_full_first_row_seconds` of that minute's start (the
-- manifest's start_utc says when; postal prints at wall-clock minute boundaries)
with_first_row as (
    select
        *,
        coalesce(
            run_seq = 1
            and abs(
                {{ epoch_seconds('load_start_utc') }} - ({{ epoch_seconds('first_label_utc') }} - 60)
            ) <= {{ var('postal_full_first_row_seconds') }},
            false
        ) as first_row_full
    from final
),

detached as (
    select
        classified.file_id,
        classified.segment,
        classified.run_key,
        classified.side,
        final.run_id,
        final.run_seq,
        final.runs_in_folder,
        classified.started_by,
        classified.n_rows,
        classified.n_events,
        cast(null as integer) as first_clock,
        final.utc_offset_minutes,
        cast(null as timestamp) as first_label_utc,
        cast(null as timestamp) as load_start_utc,
        false as first_row_full
    from classified
    inner join final
        on classified.run_key = final.run_key
        and classified.side = final.side
        and final.run_seq = 1
    where classified.is_detached_stderr
)

select *, false as is_detached_stderr from with_first_row
union all
select *, true as is_detached_stderr from detached
