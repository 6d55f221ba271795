{{ config(**per_run_config(folders=true)) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- Saturation events: where a run's full-minute rate steps down and stays down, found as
-- change points (method and citations: macros/saturation.sql, docs/analysis.md).

{% set full_minutes %}
    select run_id, minute_at, minute_offset, clock_label, messages as rate
    from {{ ref('minutes') }}
    where has_load_row
        and not is_partial
        and messages is not null
        and {{ per_run_folders_only('run_id') }}
{% endset %}

{{ saturation_change_points(full_minutes) }}
