{#
  A model's row-level checks as one test: not_null, non_negative (null allowed, negative
  not), accepted_values (null allowed, as dbt's own), unique combinations and
  relationships, each counted by one query.

  Why one test, not one per column: adding one run to an archive of 7,000 runs, each dbt
  test node costs ~0.1 s of dbt's own Python (compiling, rendering its kwargs, events)
  whatever its SQL reads; 170 column tests were ~9 s of a 33 s incremental build, and the
  61 unique_combination and relationships tests after them ~4 s. The
  checks are the same; each failing check returns one row:

      check_name | column_name | failing_rows

  and the test fails with the sum of failing_rows. `mtabench` prints those rows when the
  test fails (mtabench/pipeline/dbt_failures.py); `dbt test --select <name> --store-failures` keeps
  them in a table.

  Arguments:
  - not_null, non_negative: [column, ...]
  - accepted_values: {column: [values]}; a string value is quoted, a number is not
  - unique: [[column, ...], ...]: each combination at most once (nulls compare equal, as
    `group by` does); failing_rows counts the duplicated keys
  - relationships: [{column:, to: ref(...), field:}]: every non-null `column` value is a
    `field` of `to`; failing_rows counts the orphan rows

  Scope on DuckDB (macros/per_run_checks.sql): the rows read are the pending runs' only
  (per_run_node_filter), unless a unique combination holds neither the file_id nor the
  model's per_run_key. Relationships follow:
  - per_run_key run_id: the pending runs' rows, plus the runs the model's per-run ledger
    (per_run_state.builds) says it holds. A run not pending is unchanged since its rows
    passed, its parent row too (both built from its own files); a run that is gone has its
    rows deleted by the model's pre-hook, and were they not, its ledger row would show here.
  - per_run_key file_id: every row (the staging views over the landing are small, but a
    file that is gone has no ledger to stand in for its rows).

  This lives in tests/, not macros/: test code changes no model's rows, so it is not in the
  code hash that rebuilds every run (mtabench/pipeline/dbt_code.py).
#}
{% test column_checks(model, not_null=[], non_negative=[], accepted_values={}, unique=[], relationships=[]) %}
{{ config(fail_calc='coalesce(sum(failing_rows), 0)') }}
{%- set scope = per_run_node_filter(model, unique) -%}
{%- set scoped = '(select * from ' ~ model ~ ' where ' ~ scope.filter ~ ')' if scope else model -%}
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
{%- if checks | length + unique | length + relationships | length == 0 -%}
    {{ exceptions.raise_compiler_error('column_checks on ' ~ model ~ ' names no check') }}
{%- endif -%}
{%- set parts = [] -%}
{%- for check in checks -%}
    {%- do parts.append("select '" ~ check[0] ~ "' as check_name, '" ~ check[1] ~ "' as column_name, c"
        ~ loop.index ~ " as failing_rows from counts where c" ~ loop.index ~ " > 0") -%}
{%- endfor -%}
{%- for columns in unique -%}
    {%- do parts.append("select 'unique' as check_name, '" ~ columns | join(', ') ~ "' as column_name, count(*) as failing_rows from ("
        ~ "select 1 from " ~ scoped ~ " as t group by " ~ columns | join(', ') ~ " having count(*) > 1) as d having count(*) > 0") -%}
{%- endfor -%}
{#- relationships read the pending runs' rows only on a run_id model (the ledger stands in
    for the rest); on a file_id model, every row -#}
{%- set by_run = scope and scope.key == 'run_id' -%}
{%- for rel in relationships -%}
    {%- set orphans -%}
        select t.{{ rel.column }} as v from {{ scoped if by_run else model }} as t where t.{{ rel.column }} is not null
        {%- if by_run and rel.column == 'run_id' %}
        union all
        select run_id from per_run_state.builds where model = '{{ model.identifier }}'
        {%- endif %}
    {%- endset -%}
    {%- do parts.append("select 'relationships' as check_name, '" ~ rel.column ~ " -> " ~ rel.to.identifier ~ "." ~ rel.field
        ~ "' as column_name, count(*) as failing_rows from (" ~ orphans ~ ") as o"
        ~ " where not exists (select 1 from " ~ rel.to ~ " as p where p." ~ rel.field ~ " = o.v) having count(*) > 0") -%}
{%- endfor %}
{%- if checks %}
with counts as (
    select
    {%- for check in checks %}
        sum(case when {{ check[2] }} then 1 else 0 end) as c{{ loop.index }}{{ ',' if not loop.last }}
    {%- endfor %}
    from {{ scoped }} as t
)
{%- endif %}
{{ parts | join('\nunion all\n') }}
{% endtest %}
