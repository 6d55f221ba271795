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
