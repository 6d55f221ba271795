"""compare_runs(a, b): ministat's full comparison of any two runs, as a DuckDB table macro.

The comparisons mart holds pairs within a comparison group only; this macro, created in the
serving file at publish, answers any pair from SQL (Superset's SQL Lab, the duckdb shell):

    select * from compare_runs('run a', 'run b');

One row per ministat confidence level (80 … 99.5), with the figures `ministat -c C a b`
prints: N, min, max, median (the sorted value at index n/2), mean and stddev of both sets,
the difference, margin and their percentages, pooled s and the verdict; plus Welch's t.
A set is what `mtabench compare` reads: a run's full minutes of load-generator rows, else a
sample series of that name. No rows when either side has fewer than two values. The
arithmetic is the comparisons mart's: the macros of dbt_project/macros/ministat.sql.
"""

from __future__ import annotations

from mtabench.stats.sql import render

TEMPLATE = """
create or replace macro main.compare_runs(baseline_name, candidate_name) as table
with
run_values as (
    select 1 as side, run_id as name, cast(messages as double) as value
    from main.minutes
    where run_id in (baseline_name, candidate_name) and has_load_row and not is_partial
),
series_values as (
    select 1 as side, series as name, cast(value as double) as value
    from main.dtrace_samples
    where series in (baseline_name, candidate_name)
        and series not in (select name from run_values)
),
named as (
    select
        case when v.name = baseline_name then 1 else 2 end as side,
        v.name,
        v.value
    from (select * from run_values union all select * from series_values) as v
    -- comparing a set with itself: both sides
    union all
    select 2, name, value from run_values where baseline_name = candidate_name
    union all
    select 2, name, value from series_values where baseline_name = candidate_name
),
ranked as (
    select
        *,
        row_number() over (partition by side order by value) - 1 as idx,
        count(*) over (partition by side) as n
    from named
),
stats as (
    select
        side,
        any_value(name) as name,
        count(*) as n,
        min(value) as min_value,
        max(value) as max_value,
        {{ m.ministat_median('value', 'idx', 'n') }} as median,
        {{ m.ministat_mean('value') }} as mean,
        {{ m.ministat_variance('value') }} as variance
    from ranked
    group by side
    having count(*) >= 2
),
pair as (
    select
        a.name as baseline, b.name as candidate,
        a.n as n1, a.min_value as min1, a.max_value as max1, a.median as median1, a.mean as mean1,
        {{ m.ministat_sqrt('a.variance') }} as stddev1, a.variance as var1,
        b.n as n2, b.min_value as min2, b.max_value as max2, b.median as median2, b.mean as mean2,
        {{ m.ministat_sqrt('b.variance') }} as stddev2, b.variance as var2,
        {{ m.ministat_pair('a', 'b') }}
    from stats as a, stats as b
    where a.side = 1 and b.side = 2
),
levels as (
    select
        p.*,
        t.confidence,
        t.t as t_student,
        {{ m.ministat_margin('t.t', 'p.pooled_s', 'p.n1', 'p.n2') }} as margin
    from pair as p
    join reference.student_t as t on t.df = {{ m.ministat_t_df('p.df') }}
)
select
    l.baseline, l.candidate, l.confidence,
    l.n1, l.min1, l.max1, l.median1, l.mean1, l.stddev1,
    l.n2, l.min2, l.max2, l.median2, l.mean2, l.stddev2,
    l.df, l.t_student, l.pooled_s, l.difference, l.margin,
    {{ m.ministat_pct('l.difference', 'l.mean1') }} as difference_pct,
    {{ m.ministat_pct('l.margin', 'l.mean1') }} as margin_pct,
    {{ m.ministat_significant('l.difference', 'l.margin') }} as is_significant,
    {{ m.ministat_verdict(m.ministat_significant('l.difference', 'l.margin'), 'l.confidence') }} as verdict,
    l.welch_df, l.welch_se,
    {{ m.ministat_welch_margin('w.t', 'l.welch_se') }} as welch_margin,
    {{ m.ministat_significant('l.difference', m.ministat_welch_margin('w.t', 'l.welch_se')) }}
        as welch_is_significant
from levels as l
left join reference.student_t as w
    on w.confidence = l.confidence
    and w.df = {{ m.ministat_welch_t_df('l.welch_df') }}
order by l.confidence
"""


def compare_runs_sql() -> str:
    """The `create macro` statement, ministat's arithmetic rendered from the dbt macros."""
    return render(TEMPLATE)


READS = ("main.minutes", "main.dtrace_samples", "reference.student_t")


def create_compare_macro(con) -> bool:
    """Create compare_runs() in the connection's current database (the serving file).

    DuckDB binds a macro's tables when it is created: a file without them (a partial build)
    gets no macro rather than a failed publish."""
    present = {
        f"{schema}.{name}"
        for schema, name in con.execute(
            "select table_schema, table_name from information_schema.tables"
            " where table_catalog = current_database()"
        ).fetchall()
    }
    if not set(READS) <= present:
        return False
    con.execute(compare_runs_sql())
    return True
