{#-
  ministat's arithmetic (FreeBSD usr.bin/ministat, Debian package `ministat`), written once.
  The models int_sample_set_stats and comparisons call these macros; so do the serving file's
  compare_runs() (mtabench/stats/compare_sql.py) and `mtabench compare` (mtabench/stats/
  ministat.py), which render this file with plain Jinja: no dbt context here, and SQL both
  DuckDB and Spark run. Each expression keeps ministat's order of operations, so the figures
  print as ministat prints them (tests/test_ministat.py, against the Debian binary).
-#}

{#- C's sqrt(): NaN for a negative number (ministat prints -nan), where DuckDB's raises -#}
{% macro ministat_sqrt(x) -%}
case when ({{ x }}) < 0 then cast('NaN' as double) else sqrt({{ x }}) end
{%- endmacro %}

{#- the sorted value at index n / 2: the upper middle for even n, not averaged (idx: the
    value's 0-based rank in its set, n: the set's size) -#}
{% macro ministat_median(value, idx, n) -%}
max(case when {{ idx }} = floor({{ n }} / 2) then {{ value }} end)
{%- endmacro %}

{% macro ministat_mean(value) -%}
sum({{ value }}) / count(*)
{%- endmacro %}

{#- (Σx² − (Σx)²/n) / (n − 1), with its cancellation error for large values of small spread -#}
{% macro ministat_variance(value) -%}
case when count(*) > 1
    then (sum({{ value }} * {{ value }}) - sum({{ value }}) * sum({{ value }}) / count(*)) / (count(*) - 1)
end
{%- endmacro %}

{#- Set b compared with the baseline a (relations with n, mean, variance): Student's t with
    pooled s as ministat, and Welch's standard error and Welch–Satterthwaite df -#}
{% macro ministat_pair(a, b) -%}
{{ a }}.n + {{ b }}.n - 2 as df,
        {{ b }}.mean - {{ a }}.mean as difference,
        {{ ministat_sqrt('((' ~ b ~ '.n - 1) * ' ~ b ~ '.variance + (' ~ a ~ '.n - 1) * ' ~ a ~ '.variance) / (' ~ a ~ '.n + ' ~ b ~ '.n - 2)') }} as pooled_s,
        {{ ministat_sqrt(a ~ '.variance / ' ~ a ~ '.n + ' ~ b ~ '.variance / ' ~ b ~ '.n') }} as welch_se,
        power({{ a }}.variance / {{ a }}.n + {{ b }}.variance / {{ b }}.n, 2)
            / nullif(
                power({{ a }}.variance / {{ a }}.n, 2) / ({{ a }}.n - 1) + power({{ b }}.variance / {{ b }}.n, 2) / ({{ b }}.n - 1), 0
            ) as welch_df
{%- endmacro %}

{#- the row of ministat's t table (seed student_t): df 1..100, then the infinity row (df 0) -#}
{% macro ministat_t_df(df) -%}
case when {{ df }} > 100 then 0 else {{ df }} end
{%- endmacro %}

{#- Welch's df truncated to an integer for the table lookup (conservative) -#}
{% macro ministat_welch_t_df(welch_df) -%}
case
            when {{ welch_df }} > 100 then 0
            else greatest(1, cast(floor({{ welch_df }}) as integer))
        end
{%- endmacro %}

{#- the pooled test's standard error of the difference, and its margin t * se -#}
{% macro ministat_pooled_se(pooled_s, n1, n2) -%}
{{ pooled_s }} * sqrt(1.0 / {{ n2 }} + 1.0 / {{ n1 }})
{%- endmacro %}

{% macro ministat_margin(t, pooled_s, n1, n2) -%}
{{ t }} * {{ ministat_pooled_se(pooled_s, n1, n2) }}
{%- endmacro %}

{% macro ministat_welch_margin(t, welch_se) -%}
{{ t }} * {{ welch_se }}
{%- endmacro %}

{#- a figure as a percentage of the baseline's mean -#}
{% macro ministat_pct(x, mean1) -%}
100 * {{ x }} / nullif({{ mean1 }}, 0)
{%- endmacro %}

{#- ministat shows a difference when |d| exceeds the margin (never when the margin is NaN) -#}
{% macro ministat_significant(difference, margin) -%}
abs({{ difference }}) > {{ margin }}
{%- endmacro %}

{% macro ministat_verdict(significant, confidence) -%}
case when {{ significant }}
        then 'Difference at ' || cast({{ confidence }} as varchar) || '% confidence'
        else 'No difference proven at ' || cast({{ confidence }} as varchar) || '% confidence'
    end
{%- endmacro %}
