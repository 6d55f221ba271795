{#
  dbt's `relationships` on a file_id column of a per-file landing model, reading on DuckDB
  only the rows of the files of the pending runs (macros/per_run_checks.sql) plus the
  landing's ledger, so a build does not join every landed line to raw.files (2.35 s of each
  build at 236x the samples, 82 M maillog lines). What it still sees:

  - a pending file's rows with a file_id not in `to` (read by literal ids: DuckDB skips the
    other files' Parquet parts by their statistics, as per_run_test_filter does);
  - a ledger row (`ledger`: one per Parquet part, with its file_id) whose file is gone: the
    landing view reads exactly the parts the ledger names, so a file's rows outliving its
    raw.files row would show here, whichever run it was in.

  A file not pending is unchanged since its rows passed this test (its run's state holds its
  hash and parser version). A part whose rows carried another file's id would leave its own
  file's lines unaccounted for: validate's line accounting (landing suite) fails that file.
  With --full-refresh, on Spark, and where the ledger table does not exist (dbt over an
  exported Parquet landing), every row is read, as `relationships` does. This lives
  in tests/, not macros/: test code changes no model's rows, so it is not in the code hash
  that rebuilds every run (mtabench/pipeline/dbt_code.py).
#}
{% test relationships_of_pending_files(model, column_name, to, field, ledger=none) %}
{%- set scoped = execute and target.type == 'duckdb' and not flags.FULL_REFRESH -%}
{#- no ledger (dbt over an exported Parquet landing, `landing_path`): every row is read -#}
{%- if scoped and ledger -%}
    {%- set found = run_query(
        "select count(*) from information_schema.tables where table_schema || '.' || table_name = '"
        ~ ledger ~ "'"
    ).columns[0].values()[0] -%}
    {%- set scoped = found > 0 -%}
{%- endif -%}
{%- set ids = [] -%}
{%- if scoped -%}
    {%- set pending = 'select file_id from raw.files where run_key in (select run_key from per_run_state.pending)' -%}
    {%- set ids = run_query(pending ~ ' order by 1').columns[0].values() -%}
{%- endif %}
with child as (
    select {{ column_name }} as from_field
    from {{ model }}
    where {{ column_name }} is not null
    {%- if scoped %}
        and {% if ids | length == 0 %}false{% elif ids | length <= 2000 %}{{ file_id_in(column_name, ids) }}{% else %}{{ column_name }} in ({{ pending }}){% endif %}
    {%- endif %}
    {%- if scoped and ledger %}
    union all
    select file_id as from_field from {{ ledger }}
    {%- endif %}
),

parent as (
    select {{ field }} as to_field
    from {{ to }}
)

select child.from_field
from child
left join parent
    on child.from_field = parent.to_field
where parent.to_field is null
{% endtest %}
