{#
  pflogsumm's reading of a maillog line's program: the Postfix daemon, the smtps/ and
  submission/ prefixes stripped (tests/test_maillog_parser.py). stg_maillog__lines exposes
  it as `daemon`; int_maillog__lines inlines it where a line's kind needs it, so the regex
  runs on those lines only, not on every line.
#}
{% macro postfix_daemon(program) -%}
    regexp_replace({{ program }}, '^postfix[^/]*/((smtps|submission)/)?', '')
{%- endmacro %}

{% macro is_postfix(program) -%}
    ({{ program }} like 'postfix%')
{%- endmacro %}

{#
  Rows the ingest computed from each maillog file as it landed (ingest/maillog_derived.py,
  so a full build does not aggregate every line again): raw.maillog_messages (a file's messages) and raw.maillog_minutes
  (its counts per minute). Read on the DuckDB landing (not the Parquet one: their ledger
  raw.parquet_files is DuckDB's), unless `--vars '{landed_maillog: false}'` asks for the line
  path alone (the tests compare both).
#}
{% macro use_landed_maillog() -%}
    {{ return(target.type == 'duckdb' and var('landing_path', '') == '' and var('landed_maillog', true)) }}
{%- endmacro %}

{#
  The maillog files whose messages come from their lines: a pending run's files when more
  than one of its maillog files holds messages (a queue id's lines can span the maillog and
  its drain log; a Dovecot log beside the maillog holds none) or one has no landed messages
  part (its derive step, ingest/derive.py, did not run or failed). `column` among them, as
  literal file ids; every file when landed messages are not read.
#}
{% macro maillog_line_path_files(column) -%}
    {%- if not use_landed_maillog() -%}
        true
    {%- elif not execute -%}
        false
    {%- else -%}
        {%- set sub -%}
            with maillog_files as (
                select
                    file_runs.run_id,
                    file_runs.file_id,
                    landed.file_id is not null as has_part,
                    coalesce(landed.rows, 1) > 0 as has_messages
                from {{ ref('int_file_runs') }} as file_runs
                left join raw.parquet_files as landed
                    on file_runs.file_id = landed.file_id
                    and landed.table_name = 'maillog_messages'
                where file_runs.file_id in (select file_id from raw.parquet_files where table_name = 'maillog')
                    and {{ per_run_only('file_runs.run_id') }}
            ),
            line_runs as (
                select run_id
                from maillog_files
                group by run_id
                having count(distinct file_id) filter (where has_messages) > 1 or not bool_and(has_part)
            )
            select distinct file_id
            from maillog_files
            where run_id in (select run_id from line_runs)
            order by file_id
        {%- endset -%}
        {{ per_run_in_list(column, sub, quote=false) }}
    {%- endif -%}
{%- endmacro %}

{#
  The pending maillog files without a landed `table` part (not derived: ingest/derive.py): their
  rows come from their lines. `column` among them, as literal file ids; every file when the
  landed rows are not read.
#}
{% macro maillog_files_without(table, column) -%}
    {%- if not use_landed_maillog() -%}
        true
    {%- elif not execute -%}
        false
    {%- else -%}
        {%- set sub -%}
            select file_runs.file_id
            from {{ ref('int_file_runs') }} as file_runs
            where file_runs.file_id in (select file_id from raw.parquet_files where table_name = 'maillog')
                and file_runs.file_id not in (select file_id from raw.parquet_files where table_name = '{{ table }}')
                and {{ per_run_only('file_runs.run_id') }}
            order by 1
        {%- endset -%}
        {{ per_run_in_list(column, sub, quote=false) }}
    {%- endif -%}
{%- endmacro %}
