{{ config(**per_run_config(pairs=true)) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- The run-throughput comparisons (comparisons, set_kind = 'run_throughput') one row per pair
-- and ministat confidence level, with both runs' labels, MTA and load tool: what the "Which
-- setting won" dashboard reads and filters on (baseline, candidate, confidence). Turning the
-- level columns back into rows in the dataset SQL cost 0.5 s a query at 32x the samples.

{%- set levels = [('80', 80.0), ('90', 90.0), ('95', 95.0), ('98', 98.0), ('99', 99.0), ('99_5', 99.5)] %}

with

comparisons as (
    select * from {{ ref('comparisons') }}
    where set_kind = 'run_throughput'
        -- incremental: the pairs of new and changed runs (per_run_config(pairs=true))
        and {{ per_run_pairs_only('baseline_run_id', 'candidate_run_id') }}
),

runs as (
    select
        run_id,
        coalesce(label, run_id) as label,
        mta,
        -- major.minor: Postfix 2.0 on the seed's 2009 hardware is not Postfix 3.7 on a VM
        {{ major_minor('mta_version') }} as mta_release,
        tool
    from {{ ref('runs') }}
),

levels as (
    {%- for suffix, c in levels %}
    select
        comparison_group,
        baseline,
        candidate,
        baseline_run_id,
        candidate_run_id,
        cast({{ c }} as double) as confidence,
        n1,
        n2,
        mean1,
        mean2,
        median1,
        median2,
        difference,
        difference_pct,
        margin_{{ suffix }} as margin,
        margin_pct_{{ suffix }} as margin_pct,
        is_significant_{{ suffix }} as is_significant
    from comparisons
    {{ "union all" if not loop.last }}
    {%- endfor %}
),

final as (
    select
        levels.comparison_group,
        levels.baseline,
        levels.candidate,
        levels.baseline_run_id,
        levels.candidate_run_id,
        b.label as baseline_label,
        k.label as candidate_label,
        b.mta as baseline_mta,
        k.mta as candidate_mta,
        b.mta_release as baseline_mta_release,
        k.mta_release as candidate_mta_release,
        b.tool as baseline_tool,
        k.tool as candidate_tool,
        levels.confidence,
        levels.is_significant,
        levels.n1,
        levels.n2,
        levels.mean1,
        levels.mean2,
        levels.median1,
        levels.median2,
        levels.difference,
        levels.difference_pct,
        levels.margin,
        levels.margin_pct
    from levels
    inner join runs as b
        on levels.baseline_run_id = b.run_id
    inner join runs as k
        on levels.candidate_run_id = k.run_id
)

select * from final
