{#
  Tests that check only the runs that changed (docs/pipeline.md, per-run checks).

  A row-level test (column_checks, not_null, accepted_values, non_negative; unique_combination over a key
  holding the file_id, scoped by file, or else the run_id) of a model whose rows belong to one run each judges each
  run's rows on their own: if a run's landed files, its manifest row and the project's code
  are what they were when its rows last passed every test, they are the same rows, and the
  same tests pass again. So on DuckDB such a test reads only the rows of the *pending* runs:
  runs not yet checked at their current state. column_checks' relationships on a run_id
  model read the same rows plus the model's per-run ledger (tests/generic/column_checks.sql).
  Everything else (unique on one column, relationships on a file_id model, tests of models
  without `meta: {per_run_key: ...}`) checks every run, as before.

  per_run_state.checked holds, per run folder (raw.runs.run_key), the state its rows last
  passed every test with: a hash of its raw.runs row, its files (id, path, hash, parser
  version, status) and the code hash (macros/per_run.sql). It is written by on-run-end only
  after a whole `dbt build` (no selection) with no error, failure or skip; a failing build
  forgets the pending runs' states, so they stay pending until a build passes. The state
  comes from the landing alone, which dbt does not change: every test of a build sees the
  same pending runs, wherever it sits in the DAG. `--full-refresh` checks every run. On
  Spark every test checks every run.

  A model opts in with `config: {meta: {per_run_key: run_id}}` (rows carry the run_id: a
  folder's run or one of its `#n` runs) or `per_run_key: file_id` (rows of landed files).
#}

{# the state of every run folder now; `code` is the code hash #}
{% macro per_run_check_states() -%}
    select
        runs.run_key,
        runs.run_id as folder_run_id,
        md5(concat_ws('|',
            cast(runs as varchar),
            coalesce(files.files, '-'),
            '{{ per_run_code_hash() }}'
        )) as state
    from raw.runs as runs
    left join (
        select
            run_key,
            string_agg(concat_ws(':', file_id, path, coalesce(sha256, '-'),
                coalesce(parser_version, '-'), status), ',' order by file_id) as files
        from raw.files
        group by run_key
    ) as files
        on runs.run_key = files.run_key
{%- endmacro %}

{# on-run-start: the pending runs of this build (all of them on --full-refresh) #}
{% macro per_run_checks_setup() %}
    {% if not execute or target.type != 'duckdb' %}{{ return('') }}{% endif %}
    {% do run_query(
        'create table if not exists per_run_state.checked '
        ~ '(run_key varchar not null, state varchar not null)'
    ) %}
    {% set pending %}
        create or replace table per_run_state.pending as
        select now.*
        from ({{ per_run_check_states() }}) as now
        {% if not flags.FULL_REFRESH %}
        where not exists (
            select 1 from per_run_state.checked as c
            where c.run_key = now.run_key and c.state = now.state
        )
        {% endif %}
    {% endset %}
    {% do run_query(pending) %}
    {{ return('') }}
{% endmacro %}

{# on-run-end: a whole build that passed has checked its pending runs #}
{% macro per_run_checks_done(results) %}
    {% if not execute or target.type != 'duckdb' or flags.WHICH != 'build' %}{{ return('') }}{% endif %}
    {% set args = invocation_args_dict %}
    {% if args.get('select') or args.get('exclude') or args.get('selector') %}{{ return('') }}{% endif %}
    {% set bad = results | selectattr('status', 'in', ['error', 'fail', 'skipped', 'runtime error']) | list %}
    {% set sql %}
        delete from per_run_state.checked
        where run_key in (select run_key from per_run_state.pending)
            or run_key not in (select run_key from raw.runs);
        {% if bad | length == 0 %}
        insert into per_run_state.checked (run_key, state)
        select run_key, state from per_run_state.pending;
        {% endif %}
    {% endset %}
    {% do run_query(sql) %}
    {{ return('') }}
{% endmacro %}

{# the filter a test of the current node gets: '' = every run #}
{% macro per_run_test_filter() %}
    {% if not execute or target.type != 'duckdb' or flags.FULL_REFRESH %}{{ return('') }}{% endif %}
    {% set meta_test = model.get('test_metadata') %}
    {% set attached = graph.nodes.get(model.get('attached_node') or '') %}
    {% if not meta_test or not attached %}{{ return('') }}{% endif %}
    {% set key = attached.config.meta.get('per_run_key') %}
    {% set name = meta_test.name %}
    {% if key not in ('run_id', 'file_id') %}{{ return('') }}{% endif %}
    {% if name == 'unique_combination' %}
        {# a duplicate's rows share the key's file (or run): all of them are in or out #}
        {% set columns = meta_test.kwargs.get('columns', []) %}
        {% if 'file_id' in columns %}
            {% set key = 'file_id' %}
        {% elif key not in columns %}
            {{ return('') }}
        {% endif %}
    {% elif name not in ('not_null', 'accepted_values', 'non_negative') %}
        {# column_checks scopes its checks itself (per_run_node_filter) #}
        {{ return('') }}
    {% endif %}
    {{ return(per_run_key_filter(key, attached)) }}
{% endmacro %}

{# the rows of the pending runs of a model node whose rows carry `key` (run_id or file_id) #}
{% macro per_run_key_filter(key, node) %}
    {% set pending_files = 'select file_id from raw.files where run_key in (select run_key from per_run_state.pending)' %}
    {% if key == 'run_id' %}
        {# a folder's runs are its run_id, or run_id#1, #2 ... (int_postal__segment_runs); a
           pending folder run id with a '#' of its own would not match its rows: all rows #}
        {{ return("(split_part(run_id, '#', 1) in (select folder_run_id from per_run_state.pending)"
            ~ " or exists (select 1 from per_run_state.pending where folder_run_id like '%#%'))") }}
    {% elif node.config.meta.get('per_run_literal_ids') %}
        {# literal ids: DuckDB skips other files' Parquet parts by their statistics (the maillog
           landing); one query per test, so only where a scan would cost more #}
        {% set ids = run_query(pending_files ~ ' order by 1').columns[0].values() %}
        {% if ids | length == 0 %}{{ return('false') }}{% endif %}
        {{ return(file_id_in('file_id', ids) if ids | length <= 2000 else 'file_id in (' ~ pending_files ~ ')') }}
    {% else %}
        {{ return('file_id in (' ~ pending_files ~ ')') }}
    {% endif %}
{% endmacro %}

{#
  column_checks' scope: the model node a relation is (looked up by schema and name: the test
  sees only the relation) and the filter on its pending runs' rows, or '' (every row: Spark,
  --full-refresh, a model without per_run_key, or a `unique` combination holding neither the
  file_id nor the key, whose duplicates could span runs)
#}
{% macro per_run_node_filter(relation, unique=[]) %}
    {% if not execute or target.type != 'duckdb' or flags.FULL_REFRESH %}{{ return(none) }}{% endif %}
    {% if relation is string or relation.identifier is none %}{{ return(none) }}{% endif %}
    {% set ns = namespace(node=none) %}
    {% for node in graph.nodes.values() %}
        {% if node.resource_type in ('model', 'snapshot', 'seed')
            and (node.alias or node.name) == relation.identifier and node.schema == relation.schema %}
            {% set ns.node = node %}
        {% endif %}
    {% endfor %}
    {% set key = ns.node.config.meta.get('per_run_key') if ns.node else none %}
    {% if key not in ('run_id', 'file_id') %}{{ return(none) }}{% endif %}
    {% for columns in unique %}
        {% if 'file_id' not in columns and key not in columns %}{{ return(none) }}{% endif %}
    {% endfor %}
    {{ return({'key': key, 'filter': per_run_key_filter(key, ns.node)}) }}
{% endmacro %}

{# dbt's hook for a test's `where` config, on DuckDB: the pending runs' rows too #}
{% macro duckdb__get_where_subquery(relation) -%}
    {%- set conds = [] -%}
    {%- set where = config.get('where', '') -%}
    {%- if where -%}{%- do conds.append('(' ~ where ~ ')') -%}{%- endif -%}
    {%- set scope = per_run_test_filter() | trim -%}
    {%- if scope -%}{%- do conds.append(scope) -%}{%- endif -%}
    {%- if conds -%}
        {%- do return('(select * from ' ~ relation ~ ' where ' ~ conds | join(' and ') ~ ') dbt_subquery') -%}
    {%- else -%}
        {%- do return(relation) -%}
    {%- endif -%}
{%- endmacro %}
