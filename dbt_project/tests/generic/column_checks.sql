{#
  A model's row-level column checks as one test: not_null, non_negative (null allowed,
  negative not) and accepted_values (null allowed, as dbt's own), all counted in one pass
  over the model.

  Why one test, not one per column: adding one run to an archive of 7,000 runs, each dbt
  test node costs ~0.1 s of dbt's own Python (compiling, rendering its kwargs, events)
  whatever its SQL reads; 170 column tests were ~9 s of a 33 s incremental build
  (README "Scale"). The checks are the same; each failing check returns one row:

      check_name | column_name | failing_rows

  and the test fails with the sum of failing_rows. `mtabench` prints those rows when the
  test fails (mtabench/dbt_failures.py); `dbt test --select <name> --store-failures` keeps
  them in a table. On DuckDB the rows read are the pending runs' only, as for the
  single-column tests before (macros/per_run_checks.sql).

  accepted_values: {column: [values]}; a string value is quoted, a number is not. This lives
  in tests/, not macros/: test code changes no model's rows, so it is not in the code hash
  that rebuilds every run (mtabench/dbt_code.py).
#}
{% test column_checks(model, not_null=[], non_negative=[], accepted_values={}) %}
{{ config(fail_calc='coalesce(sum(failing_rows), 0)') }}
{%- set checks = [] -%}
{%- for column in not_null -%}
    {%- do checks.append(('not_null', column, column ~ ' is null')) -%}
{%- endfor -%}
{%- for column in non_negative -%}
    {%- do checks.append(('non_negative', column, column ~ ' < 0')) -%}
{%- endfor -%}
{%- for column, values in accepted_values.items() -%}
    {%- set listed = [] -%}
    {%- for v in values -%}
        {%- do listed.append("'" ~ (v | replace("'", "''")) ~ "'" if v is string else v | string) -%}
    {%- endfor -%}
    {%- do checks.append(('accepted_values', column, column ~ ' not in (' ~ listed | join(', ') ~ ')')) -%}
{%- endfor -%}
{%- if checks | length == 0 -%}
    {{ exceptions.raise_compiler_error('column_checks on ' ~ model ~ ' names no column') }}
{%- endif %}
with counts as (
    select
    {%- for check in checks %}
        sum(case when {{ check[2] }} then 1 else 0 end) as c{{ loop.index }}{{ ',' if not loop.last }}
    {%- endfor %}
    from {{ model }}
)
{% for check in checks %}
select '{{ check[0] }}' as check_name, '{{ check[1] }}' as column_name, c{{ loop.index }} as failing_rows
from counts
where c{{ loop.index }} > 0
{{ 'union all' if not loop.last }}
{%- endfor %}
{% endtest %}
