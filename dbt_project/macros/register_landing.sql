{#
  Point the `raw` source at the Parquet landing (`mtabench ingest --parquet DIR`) when the
  `landing_path` var is set; without it the sources are the DuckDB landing tables. Runs as
  on-run-start, so every invocation sees the landing as it is now. `landing_overrides` maps
  a table to another folder (the Spark engine's own maillog parse).
#}
{% macro register_landing() %}
    {% set root = var('landing_path', '') %}
    {% if not execute or root == '' %}{{ return('') }}{% endif %}
    {% do run_query(adapter.dispatch('create_landing_schema', 'mtabench')()) %}
    {% for node in graph.sources.values() if node.source_name == 'raw' %}
        {% set path = var('landing_overrides', {}).get(node.name, root ~ '/' ~ node.name) %}
        {% do run_query(adapter.dispatch('landing_view', 'mtabench')(node.name, path)) %}
    {% endfor %}
    {{ return('') }}
{% endmacro %}

{% macro default__create_landing_schema() -%}
    create schema if not exists raw
{%- endmacro %}
{% macro spark__create_landing_schema() -%}
    create database if not exists raw
{%- endmacro %}

{% macro default__landing_view(name, path) -%}
    create or replace view raw.{{ name }} as
    select * from read_parquet('{{ path }}/*/*.parquet', hive_partitioning = true, hive_types_autocast = false)
{%- endmacro %}
{% macro spark__landing_view(name, path) -%}
    create or replace view raw.{{ name }} as select * from parquet.`{{ path }}`
{%- endmacro %}
