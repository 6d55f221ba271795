{{ config(**per_run_config(pairs=true, always="set_kind <> 'run_throughput'")) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- ministat's comparison of data sets within a comparison group (see int_sample_sets): one
-- row per ordered pair, ministat's confidence levels as columns. Student's t with pooled s
-- exactly as ministat prints it, plus Welch's t. baseline = ministat's first file (x),
-- candidate = the second (+). Runs compare with the other runs of their group, or, when their
-- manifest names a baseline, with that run only; any other pair: `mtabench compare` or the
-- serving file's compare_runs() macro.

{%- set levels = [('80', 80.0), ('90', 90.0), ('95', 95.0), ('98', 98.0), ('99', 99.0), ('99_5', 99.5)] %}

with

stats as (
    select * from {{ ref('int_sample_set_stats') }}
    where n >= 2
),

-- ministat's t table pivoted: one row per df, one column per confidence
student_t as (
    select
        df,
        {%- for suffix, c in levels %}
        max(case when confidence = {{ c }} then t end) as t_{{ suffix }}{{ "," if not loop.last }}
        {%- endfor %}
    from {{ ref('student_t') }}
    group by df
),

group_pairs as (
    select
        a.set_kind,
        a.comparison_group,
        a.set_name as baseline,
        b.set_name as candidate
    from stats as a
    inner join stats as b
        on a.set_kind = b.set_kind
        and a.comparison_group = b.comparison_group
        and a.set_name <> b.set_name
    -- a run with a named baseline compares with it only (next CTE), not with its group
    where a.baseline_set_name is null
        and b.baseline_set_name is null
),

baseline_pairs as (
    select
        c.set_kind,
        c.comparison_group,
        c.baseline_set_name as baseline,
        c.set_name as candidate
    from stats as c
    inner join stats as a
        on c.set_kind = a.set_kind
        and c.baseline_set_name = a.set_name
    where c.baseline_set_name <> c.set_name
),

pairs as (
    select * from group_pairs
    union all
    select * from baseline_pairs
),

figures as (
    select
        p.set_kind,
        p.comparison_group,
        p.baseline,
        p.candidate,
        a.run_id as baseline_run_id,
        b.run_id as candidate_run_id,
        a.n as n1, a.min_value as min1, a.max_value as max1, a.median as median1, a.mean as mean1,
        a.stddev as stddev1, a.variance as var1,
        b.n as n2, b.min_value as min2, b.max_value as max2, b.median as median2, b.mean as mean2,
        b.stddev as stddev2, b.variance as var2,
        {{ ministat_pair('a', 'b') }}
    from pairs as p
    inner join stats as a
        on p.set_kind = a.set_kind
        and p.baseline = a.set_name
    inner join stats as b
        on p.set_kind = b.set_kind
        and p.candidate = b.set_name
    -- incremental: the pairs of new and changed runs (a pair's figures depend on its two runs
    -- only); other data sets (dtrace series) every time
    where p.set_kind <> 'run_throughput'
        or {{ per_run_pairs_only('a.run_id', 'b.run_id') }}
),

-- ministat's table has rows for df 1..100; beyond that it uses the infinity row (df 0 here).
-- The arithmetic is macros/ministat.sql's, shared with compare_runs() and `mtabench compare`.
final as (
    select
        f.set_kind,
        f.comparison_group,
        f.baseline,
        f.candidate,
        f.baseline_run_id,
        f.candidate_run_id,
        f.n1, f.min1, f.max1, f.median1, f.mean1, f.stddev1,
        f.n2, f.min2, f.max2, f.median2, f.mean2, f.stddev2,
        f.df,
        f.pooled_s,
        f.difference,
        {{ ministat_pct('f.difference', 'f.mean1') }} as difference_pct,
        f.welch_df,
        f.welch_se,
        {%- for suffix, c in levels %}
        {%- set margin = ministat_margin('s.t_' ~ suffix, 'f.pooled_s', 'f.n1', 'f.n2') %}
        {%- set welch_margin = ministat_welch_margin('w.t_' ~ suffix, 'f.welch_se') %}
        {{ margin }} as margin_{{ suffix }},
        {{ ministat_pct(margin, 'f.mean1') }} as margin_pct_{{ suffix }},
        {{ ministat_significant('f.difference', margin) }} as is_significant_{{ suffix }},
        {{ welch_margin }} as welch_margin_{{ suffix }},
        {{ ministat_significant('f.difference', welch_margin) }} as welch_is_significant_{{ suffix }}{{ "," if not loop.last }}
        {%- endfor %}
    from figures as f
    inner join student_t as s
        on s.df = {{ ministat_t_df('f.df') }}
    left join student_t as w
        on w.df = {{ ministat_welch_t_df('f.welch_df') }}
),

with_verdict as (
    select
        *,
        -- the highest confidence at which ministat says "Difference at C% confidence"
        case
            {%- for suffix, c in levels | reverse %}
            when is_significant_{{ suffix }} then cast({{ c }} as double)
            {%- endfor %}
        end as significant_at
    from final
)

select * from with_verdict
