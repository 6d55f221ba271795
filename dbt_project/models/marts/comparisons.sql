-- ministat's comparison of every data set against every other of the same kind
-- (run throughput per full minute, or sample series), at each of ministat's confidence
-- levels: Student's t with pooled s exactly as ministat prints it, plus Welch's t.
-- baseline = ministat's first file (x), candidate = the second (+).

with

stats as (
    select * from {{ ref('int_sample_set_stats') }}
    where n >= 2
),

student_t as (
    select * from {{ ref('student_t') }}
),

pairs as (
    select
        a.set_kind,
        a.set_name as baseline,
        b.set_name as candidate,
        a.run_id as baseline_run_id,
        b.run_id as candidate_run_id,
        a.n as n1, a.min_value as min1, a.max_value as max1, a.median as median1, a.mean as mean1,
        a.stddev as stddev1, a.variance as var1,
        b.n as n2, b.min_value as min2, b.max_value as max2, b.median as median2, b.mean as mean2,
        b.stddev as stddev2, b.variance as var2,
        a.n + b.n - 2 as df,
        b.mean - a.mean as difference,
        sqrt(((b.n - 1) * b.variance + (a.n - 1) * a.variance) / (a.n + b.n - 2)) as pooled_s,
        sqrt(a.variance / a.n + b.variance / b.n) as welch_se
    from stats as a
    inner join stats as b
        on a.set_kind = b.set_kind
        and a.set_name <> b.set_name
),

with_welch_df as (
    select
        *,
        -- Welch–Satterthwaite degrees of freedom
        power(var1 / n1 + var2 / n2, 2)
            / nullif(power(var1 / n1, 2) / (n1 - 1) + power(var2 / n2, 2) / (n2 - 1), 0) as welch_df
    from pairs
),

-- ministat's table has rows for df 1..100; beyond that it uses the infinity row (df 0 here)
student as (
    select
        p.*,
        t.confidence,
        t.t as t_student,
        t.t * p.pooled_s * sqrt(1.0 / p.n2 + 1.0 / p.n1) as margin
    from with_welch_df as p
    inner join student_t as t
        on t.df = case when p.df > 100 then 0 else p.df end
),

final as (
    select
        s.set_kind,
        s.baseline,
        s.candidate,
        s.baseline_run_id,
        s.candidate_run_id,
        s.confidence,
        s.n1, s.min1, s.max1, s.median1, s.mean1, s.stddev1,
        s.n2, s.min2, s.max2, s.median2, s.mean2, s.stddev2,
        s.df,
        s.t_student,
        s.pooled_s,
        s.difference,
        s.margin,
        100 * s.difference / nullif(s.mean1, 0) as difference_pct,
        100 * s.margin / nullif(s.mean1, 0) as margin_pct,
        abs(s.difference) > s.margin as is_significant,
        case when abs(s.difference) > s.margin
            then 'Difference at ' || cast(s.confidence as {{ dbt.type_string() }}) || '% confidence'
            else 'No difference proven at ' || cast(s.confidence as {{ dbt.type_string() }}) || '% confidence'
        end as verdict,
        s.welch_df,
        s.welch_se,
        w.t as t_welch,
        w.t * s.welch_se as welch_margin,
        abs(s.difference) > w.t * s.welch_se as welch_is_significant
    from student as s
    left join student_t as w
        on w.confidence = s.confidence
        and w.df = case when s.welch_df > 100 then 0 else greatest(1, cast(floor(s.welch_df) as integer)) end
)

select * from final
