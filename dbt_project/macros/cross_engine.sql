{# Dialect differences live here so the models run on DuckDB and Spark alike. #}

{% macro percentile_cont(expr, fraction) -%}
    {{ return(adapter.dispatch('percentile_cont', 'mtabench')(expr, fraction)) }}
{%- endmacro %}
{% macro default__percentile_cont(expr, fraction) -%}
    quantile_cont({{ expr }}, {{ fraction }})
{%- endmacro %}
{% macro spark__percentile_cont(expr, fraction) -%}
    percentile({{ expr }}, {{ fraction }})
{%- endmacro %}

{# timestamp + n minutes (n may be an expression) #}
{% macro add_minutes(ts, n) -%}
    {{ return(adapter.dispatch('add_minutes', 'mtabench')(ts, n)) }}
{%- endmacro %}
{% macro default__add_minutes(ts, n) -%}
    ({{ ts }} + to_minutes(cast({{ n }} as bigint)))
{%- endmacro %}
{% macro spark__add_minutes(ts, n) -%}
    timestampadd(MINUTE, {{ n }}, {{ ts }})
{%- endmacro %}

{% macro date_to_timestamp(d) -%}
    cast({{ d }} as timestamp)
{%- endmacro %}

{% macro regex_match(expr, pattern) -%}
    {{ return(adapter.dispatch('regex_match', 'mtabench')(expr, pattern)) }}
{%- endmacro %}
{% macro default__regex_match(expr, pattern) -%}
    regexp_matches({{ expr }}, '{{ pattern }}')
{%- endmacro %}
{% macro spark__regex_match(expr, pattern) -%}
    ({{ expr }} rlike '{{ pattern }}')
{%- endmacro %}

{# seconds since the epoch, with fractions #}
{% macro epoch_seconds(ts) -%}
    {{ return(adapter.dispatch('epoch_seconds', 'mtabench')(ts)) }}
{%- endmacro %}
{% macro default__epoch_seconds(ts) -%}
    (epoch_us({{ ts }}) / 1000000.0)
{%- endmacro %}
{% macro spark__epoch_seconds(ts) -%}
    (cast(unix_micros({{ ts }}) as double) / 1000000)
{%- endmacro %}

{# a string field of a JSON object held as text #}
{% macro json_string(expr, key) -%}
    {{ return(adapter.dispatch('json_string', 'mtabench')(expr, key)) }}
{%- endmacro %}
{% macro default__json_string(expr, key) -%}
    json_extract_string({{ expr }}, '$.{{ key }}')
{%- endmacro %}
{% macro spark__json_string(expr, key) -%}
    get_json_object({{ expr }}, '$.{{ key }}')
{%- endmacro %}

{# the values of a group joined with ', ' in sorted order (deterministic on both engines) #}
{% macro sorted_string_agg(expr) -%}
    {{ return(adapter.dispatch('sorted_string_agg', 'mtabench')(expr)) }}
{%- endmacro %}
{% macro default__sorted_string_agg(expr) -%}
    string_agg({{ expr }}, ', ' order by {{ expr }})
{%- endmacro %}
{% macro spark__sorted_string_agg(expr) -%}
    nullif(array_join(sort_array(collect_list({{ expr }})), ', '), '')
{%- endmacro %}

{# first integer captured by a regex group (null when absent) #}
{% macro regex_int(expr, pattern) -%}
    {{ return(adapter.dispatch('regex_int', 'mtabench')(expr, pattern)) }}
{%- endmacro %}
{% macro default__regex_int(expr, pattern) -%}
    cast(nullif(regexp_extract({{ expr }}, '{{ pattern }}', 1), '') as bigint)
{%- endmacro %}
{% macro spark__regex_int(expr, pattern) -%}
    cast(nullif(regexp_extract({{ expr }}, '{{ pattern }}', 1), '') as bigint)
{%- endmacro %}

{# major.minor of a version string ('3.7.11' -> '3.7'), null for null: DuckDB's split_part;
   Spark's split takes a regex (dbt's split_part escapes it with backslashes, which
   spark.sql.parser.escapedStringLiterals changes), so split on the class [.] #}
{% macro major_minor(expr) -%}
    {{ return(adapter.dispatch('major_minor', 'mtabench')(expr)) }}
{%- endmacro %}
{% macro default__major_minor(expr) -%}
    split_part({{ expr }}, '.', 1) || '.' || split_part({{ expr }}, '.', 2)
{%- endmacro %}
{% macro spark__major_minor(expr) -%}
    case when {{ expr }} is not null then
        concat(split({{ expr }}, '[.]')[0], '.', coalesce(split({{ expr }}, '[.]')[1], ''))
    end
{%- endmacro %}

{# a struct of the given fields: a list of column names (each field named after its column),
   or a dict of field name to expression (kept in order) #}
{% macro struct_of(fields) -%}
    {{ return(adapter.dispatch('struct_of', 'mtabench')(fields)) }}
{%- endmacro %}
{% macro default__struct_of(fields) -%}
    struct_pack({% for name in fields %}{{ name }} := {{ fields[name] if fields is mapping else name }}{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}
{% macro spark__struct_of(fields) -%}
    named_struct({% for name in fields %}'{{ name }}', {{ fields[name] if fields is mapping else name }}{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}
