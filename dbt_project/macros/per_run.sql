{#
  Per-run incremental models: a build's cost follows the runs that changed, not the archive.

  A per-run model's rows for a run depend only on that run's landed files. On DuckDB such a
  model is `incremental`: each build it deletes the rows of every run whose fingerprint
  (int_run_fingerprints: the run's files, their hashes and parser versions, plus a hash of
  the project's model code) differs from the one it was last built with, or that is gone,
  then appends the rows of exactly the new and changed runs. `per_run_state.builds` holds,
  per model, the fingerprint each run was built with (written by a post-hook in the same
  transaction). `dbt build --full-refresh` (`mtabench run --full-refresh`) rebuilds all.
  On Spark the same models are incremental Delta tables with the same hooks (Delta has
  DELETE; its DELETE takes no subquery, so the runs to keep are read first and written as
  literals: per_run_not_in). A schema change syncs the columns (sync_all_columns); a code
  change rebuilds every run anyway.

  Use: {{ config(**per_run_config()) }} at the top of the model (batch_lines=N: built in
  batches of runs, see per_run_files_batch below), and
  `where {{ per_run_only('run_id') }}` on each input it reads rows from. A model whose rows
  carry a folder's `#n` runs (postal output holding several runs) uses
  per_run_config(folders=true) and per_run_folders_only / per_run_ids_only (below).
#}

{# The stale rows are deleted outside the model's transaction: DuckDB refuses an ALTER TABLE
   (a code change that adds a column: on_schema_change) on a table the same transaction
   deleted from ("another transaction has altered this table"). A build killed between the
   two leaves the runs' old fingerprints, so the next build redoes them. #}
{% macro per_run_config(folders=false, batch_lines=none, pairs=false, always=none, batch_files=none) %}
    {% if target.type in ('duckdb', 'spark') %}
        {# on Spark a model's one statement reads its pending runs: no batches #}
        {% set batches = [] if batch_lines is none or target.type != 'duckdb' else
            ["{{ per_run_insert_batches('file_id', " ~ batch_lines
                ~ (", batch_files='" ~ batch_files ~ "'" if batch_files else "") ~ ") }}"] %}
        {% if pairs %}
            {% set stale = '{{ per_run_pairs_delete_stale(' ~ ('always="' ~ always ~ '"' if always else '') ~ ') }}' %}
        {% else %}
            {% set stale = "{{ per_run_folders_delete_stale() }}" if folders else "{{ per_run_delete_stale() }}" %}
        {% endif %}
        {{ return({
            'materialized': 'incremental',
            'incremental_strategy': 'append',
            'on_schema_change': 'sync_all_columns',
            'pre_hook': [{'sql': stale, 'transaction': false}],
            'post_hook': batches + ["{{ per_run_forget() }}", "{{ per_run_record() }}"],
        }) }}
    {% endif %}
    {{ return({'materialized': 'table'}) }}
{% endmacro %}

{# the state table; created by on-run-start (on Spark a Delta table beside the models') #}
{# (On Spark partitioned by model: models built at once each delete and append their own
   partition; Delta reports a conflict when a delete's files could hold another's rows) #}
{% macro per_run_state_setup() %}
    {% if not execute %}{{ return('') }}{% endif %}
    {% if target.type == 'spark' %}
        {% do run_query('create database if not exists per_run_state') %}
        {% do run_query(
            'create table if not exists per_run_state.builds '
            ~ '(model string not null, run_id string not null, fingerprint string not null) using delta '
            ~ 'partitioned by (model)'
        ) %}
        {{ return('') }}
    {% endif %}
    {% if target.type != 'duckdb' %}{{ return('') }}{% endif %}
    {% do run_query(
        'create schema if not exists per_run_state; '
        ~ 'create table if not exists per_run_state.builds '
        ~ '(model varchar not null, run_id varchar not null, fingerprint varchar not null)'
    ) %}
    {{ return('') }}
{% endmacro %}

{# models the project no longer has: dbt never drops a removed model's table, so a build
   file made before kept them (int_maillog__message_lines: a second copy of every queue-id
   line, ~1 GB at 32x the samples) and their per-run state #}
{% macro drop_retired_models() %}
    {% if not execute or target.type not in ('duckdb', 'spark') %}{{ return('') }}{% endif %}
    {% for relation in ['intermediate.int_maillog__message_lines'] %}
        {% do run_query('drop table if exists ' ~ relation) %}
        {% do run_query(
            "delete from per_run_state.builds where model = '" ~ relation.split('.')[1] ~ "'"
        ) %}
    {% endfor %}
    {{ return('') }}
{% endmacro %}

{# one hash of every model's, seed's and macro's code and the vars: the one mtabench passes in
   MTABENCH_DBT_CODE_HASH (mtabench/pipeline/dbt_code.py), else (dbt run by hand) the models' and seeds'
   checksums from dbt's graph, whose every read serializes every node: a code change rebuilds
   every run #}
{% macro per_run_code_hash() %}
    {% if not execute %}{{ return('') }}{% endif %}
    {% set given = env_var('MTABENCH_DBT_CODE_HASH', '') %}
    {% if given %}{{ return(given) }}{% endif %}
    {% set parts = [] %}
    {% for node in graph.nodes.values() | sort(attribute='unique_id') %}
        {% if node.resource_type in ('model', 'seed') %}
            {% do parts.append(node.unique_id ~ '=' ~ node.checksum.checksum) %}
        {% endif %}
    {% endfor %}
    {{ return(local_md5(parts | join(';'))) }}
{% endmacro %}

{# the runs as they are now, each with the fingerprint this model must be built with #}
{% macro per_run_current() -%}
    select run_id, fingerprint || '/{{ per_run_code_hash() }}' as fingerprint
    from {{ ref('int_run_fingerprints') }}
{%- endmacro %}

{# the runs this model holds up to date (built with their current fingerprint) #}
{% macro per_run_fresh() -%}
    select builds.run_id
    from per_run_state.builds as builds
    inner join ({{ per_run_current() }}) as cur
        on builds.run_id = cur.run_id
        and builds.fingerprint = cur.fingerprint
    where builds.model = '{{ this.identifier }}'
{%- endmacro %}

{#
  Spark: whether this model holds every current run at its current fingerprint and no other
  (the state table says so). Then its filters are `false` and its hooks write nothing: each
  Delta statement is a Spark job and a commit, seconds each however few its rows.
#}
{% macro per_run_up_to_date() %}
    {% if target.type != 'spark' or not execute or not is_incremental() %}{{ return(false) }}{% endif %}
    {% set sub %}
        select count(*) from ({{ per_run_current() }}) as cur
        full outer join (
            select run_id, fingerprint from per_run_state.builds where model = '{{ this.identifier }}'
        ) as builds
            on cur.run_id = builds.run_id and cur.fingerprint = builds.fingerprint
        where cur.run_id is null or builds.run_id is null
    {% endset %}
    {{ return(run_query(sub).columns[0].values()[0] == 0) }}
{% endmacro %}

{# a filter: true on a full build; on an incremental one, only the runs to (re)build #}
{% macro per_run_only(column) -%}
    {%- if per_run_up_to_date() -%}
        false
    {%- elif is_incremental() -%}
        {{ column }} in (select run_id from ({{ per_run_current() }}) as cur where run_id not in ({{ per_run_fresh() }}))
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}

{#
  the same filter on file_id, for a model that reads a landing table (maillog: Parquet parts,
  one file each). The ids are written into the SQL as constants: DuckDB then skips the other
  files' parts by their statistics instead of reading the whole landing (4x faster at 8x).
  folders=true: the files of the folders to rebuild (a model on per_run_config(folders=true)).
#}
{% macro per_run_files_only(column, max_literals=2000, folders=false) -%}
    {%- if per_run_up_to_date() -%}
        false
    {%- elif is_incremental() and execute -%}
        {%- set sub -%}
            select file_id from {{ ref('int_file_runs') }}
            where {{ per_run_folders_only('run_id') if folders else per_run_only('run_id') }}
        {%- endset -%}
        {{ per_run_in_list(column, sub, quote=false, max_literals=max_literals) }}
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}

{#
  `column in (...)` over the ids `sub` selects: written as literals (quoted when `quote`; file
  ids as one list, file_id_in) up to `max_literals` of them, so DuckDB skips other files' parts
  or runs' row groups;
  beyond that the subquery itself; `false` when there are none
#}
{% macro per_run_in_list(column, sub, quote, max_literals=2000) -%}
    {%- set ids = run_query(sub).columns[0].values() -%}
    {%- if ids | length == 0 -%}
        false
    {%- elif ids | length <= max_literals -%}
        {%- set literals = [] -%}
        {%- for i in ids -%}
            {%- do literals.append("'" ~ (i | replace("'", "''")) ~ "'" if quote else i) -%}
        {%- endfor -%}
        {{ file_id_in(column, literals) if not quote else column ~ ' in (' ~ (literals | join(', ')) ~ ')' }}
    {%- else -%}
        {{ column }} in ({{ sub }})
    {%- endif -%}
{%- endmacro %}

{#
  `expr not in (sub)` for a delete's condition: as is on DuckDB; on Spark, whose Delta DELETE
  takes no subquery, with the ids `sub` selects now as literals (`true` when there are none)
#}
{% macro per_run_not_in(expr, sub) -%}
    {%- if target.type != 'spark' -%}
        {{ expr }} not in ({{ sub }})
    {%- elif not execute -%}
        true
    {%- else -%}
        {%- set ids = run_query(sub).columns[0].values() -%}
        {%- if ids | length == 0 -%}
            true
        {%- else -%}
            {%- set literals = [] -%}
            {%- for i in ids -%}
                {#- Spark reads literals raw (no escapes): an id with a quote or backslash as its bytes -#}
                {%- if "'" in i or "\\" in i -%}
                    {%- do literals.append("cast(unhex('" ~ i.encode('utf-8').hex() ~ "') as string)") -%}
                {%- else -%}
                    {%- do literals.append("'" ~ i ~ "'") -%}
                {%- endif -%}
            {%- endfor -%}
            {{ expr }} not in ({{ literals | join(', ') }})
        {%- endif -%}
    {%- endif -%}
{%- endmacro %}

{# pre-hook: the rows of changed and removed runs go (and rows of any run not on record) #}
{% macro per_run_delete_stale() %}
    {% if not is_incremental() or per_run_up_to_date() %}{{ return('') }}{% endif %}
    delete from {{ this }}
    where run_id is null or {{ per_run_not_in('run_id', per_run_fresh()) }}
{% endmacro %}

{# post-hooks: every current run is now built with its current fingerprint #}
{% macro per_run_forget() %}
    {% if per_run_up_to_date() %}{{ return('') }}{% endif %}
    delete from per_run_state.builds where model = '{{ this.identifier }}'
{% endmacro %}
{% macro per_run_record() %}
    {% if per_run_up_to_date() %}{{ return('') }}{% endif %}
    insert into per_run_state.builds (model, run_id, fingerprint)
    select '{{ this.identifier }}', run_id, fingerprint from ({{ per_run_current() }}) as cur
{% endmacro %}

{#
  Folder variants, for models whose rows carry a folder's `#n` run ids (a postal output holding
  several runs, int_postal__segment_runs): a folder's runs are rebuilt together. The
  fingerprint's run_id is the folder's first run (int_folder_runs); `split_part(run_id, '#', 1)`
  names the folder on both sides, so a run id with a '#' of its own only groups folders
  together (they are then rebuilt together, never half).
#}

{# the folders this model holds up to date: every run of theirs built with its fingerprint #}
{% macro per_run_folders_fresh() -%}
    select split_part(cur.run_id, '#', 1) as folder
    from ({{ per_run_current() }}) as cur
    left join per_run_state.builds as builds
        on builds.model = '{{ this.identifier }}'
        and builds.run_id = cur.run_id
        and builds.fingerprint = cur.fingerprint
    group by 1
    having count(builds.run_id) = count(*)
{%- endmacro %}

{# a filter on an input whose run ids may be `#n` runs: true on a full build #}
{% macro per_run_folders_only(column) -%}
    {%- if per_run_up_to_date() -%}
        false
    {%- elif is_incremental() -%}
        split_part({{ column }}, '#', 1) not in ({{ per_run_folders_fresh() }})
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}

{#
  the same on an input whose run ids are the fingerprint's (int_file_runs: maillog, queue,
  vmstat ...), as literals: DuckDB skips other runs' row groups by their statistics
#}
{% macro per_run_ids_only(column, max_literals=2000) -%}
    {%- if per_run_up_to_date() -%}
        false
    {%- elif is_incremental() and execute -%}
        {%- set sub -%}
            select run_id from ({{ per_run_current() }}) as cur
            where split_part(run_id, '#', 1) not in ({{ per_run_folders_fresh() }})
        {%- endset -%}
        {{ per_run_in_list(column, sub, quote=true, max_literals=max_literals) }}
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}

{# pre-hook, folder variant: the rows of folders not fresh go #}
{% macro per_run_folders_delete_stale() %}
    {% if not is_incremental() or per_run_up_to_date() %}{{ return('') }}{% endif %}
    delete from {{ this }}
    where run_id is null or {{ per_run_not_in("split_part(run_id, '#', 1)", per_run_folders_fresh()) }}
{% endmacro %}

{#
  Pair variants, for models with a row per pair of runs (comparisons: baseline_run_id,
  candidate_run_id): a row is rebuilt when either of its runs is, with the folder semantics
  above. Adding a run to a group of n runs rebuilds its 2n pairs, not every group's.
  per_run_config(pairs=true, always="<condition>"): rows matching the condition are rebuilt
  every time (data sets not tied to one run).
#}
{% macro per_run_pair_pending(a, b) -%}
    (split_part({{ a }}, '#', 1) not in ({{ per_run_folders_fresh() }})
        or split_part({{ b }}, '#', 1) not in ({{ per_run_folders_fresh() }}))
{%- endmacro %}

{# a filter on the pairs computed: true on a full build; else the pairs of runs to rebuild #}
{% macro per_run_pairs_only(a, b) -%}
    {%- if per_run_up_to_date() -%}
        false
    {%- elif is_incremental() -%}
        {{ per_run_pair_pending(a, b) }}
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}

{# pre-hook, pair variant #}
{% macro per_run_pairs_delete_stale(always=none) %}
    {% if not is_incremental() %}{{ return('') }}{% endif %}
    {% if per_run_up_to_date() %}{# the rows rebuilt every time, or nothing #}
        {{ return('delete from ' ~ this ~ ' where ' ~ always if always else '') }}
    {% endif %}
    {% set fresh = per_run_folders_fresh() %}
    delete from {{ this }}
    where baseline_run_id is null or candidate_run_id is null
        or {{ per_run_not_in("split_part(baseline_run_id, '#', 1)", fresh) }}
        or {{ per_run_not_in("split_part(candidate_run_id, '#', 1)", fresh) }}
        {%- if always %} or ({{ always }}){% endif %}
{% endmacro %}

{#
  Batches: a per-run model whose one statement over every pending run
  outgrows DuckDB's memory is built in batches of whole runs, each of at most `lines` landed
  lines (and 2000 files). `messages` numbers each queue id's lines with a window that carries
  the lines' columns: at 236x the samples (57 M queue-id lines) one statement spilled and took
  336 s; an eighth of the files took 46 s, a 32nd 4.8 s, so the time per line grows with the
  statement's size. The model reads its lines through per_run_files_batch(column, lines): the
  first batch's file ids as literals, in its own statement; the post-hook
  per_run_insert_batches(lines) inserts each further batch with the same compiled SQL and that
  batch's ids in their place. Runs stay whole (a queue id's lines span a run's maillog and
  drain log). An incremental build of one new run is one batch, as before.
#}
{% macro per_run_file_batches(lines, batch_files=none) %}
    {% set sub %}
        select fr.run_id, fr.file_id, coalesce(f.lines_total, 0) as n
        from {{ ref('int_file_runs') }} as fr
        inner join {{ ref('stg_raw__files') }} as f on fr.file_id = f.file_id
        where {{ per_run_only('fr.run_id') }}
            and {{ _per_run_batch_files(batch_files, 'fr.file_id') }}
        order by fr.run_id, fr.file_id
    {% endset %}
    {% set rows = run_query(sub).rows %}
    {% set batches = [] %}
    {% set state = {'batch': [], 'lines': 0, 'run': none, 'run_files': [], 'run_lines': 0} %}
    {% for row in rows %}
        {% if row[0] != state.run %}
            {% do _per_run_close_run(state, batches, lines) %}
            {% do state.update({'run': row[0], 'run_files': [], 'run_lines': 0}) %}
        {% endif %}
        {% do state.run_files.append(row[1]) %}
        {% do state.update({'run_lines': state.run_lines + row[2]}) %}
    {% endfor %}
    {% do _per_run_close_run(state, batches, lines) %}
    {% if state.batch %}{% do batches.append(state.batch) %}{% endif %}
    {{ return(batches) }}
{% endmacro %}

{# the files a model's batches hold (`batch_files`: a model that reads only some files, whose
   other files would make batches of nothing); every pending file by default #}
{% macro _per_run_batch_files(batch_files, column) -%}
    {%- if batch_files -%}
        {% do exceptions.raise_compiler_error('per_run: unknown batch_files ' ~ batch_files) %}
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}

{# a run's files join the open batch, or start the next one when the batch would outgrow `lines` #}
{% macro _per_run_close_run(state, batches, lines) %}
    {% if not state.run_files %}{{ return('') }}{% endif %}
    {% if state.batch and (state.lines + state.run_lines > lines
            or (state.batch | length) + (state.run_files | length) > 2000) %}
        {% do batches.append(state.batch) %}
        {% do state.update({'batch': [], 'lines': 0}) %}
    {% endif %}
    {% do state.update({'batch': state.batch + state.run_files, 'lines': state.lines + state.run_lines}) %}
    {{ return('') }}
{% endmacro %}

{% macro _per_run_batch_filter(column, ids) -%}
    {{ file_id_in(column, ids) }}
{%- endmacro %}

{#
  `column` among the file ids `ids`, as one list constant. On the maillog landing (a Hive
  partition folder per file) DuckDB applies it to the parts' folders before it opens any part;
  an IN list of literals costs there about files x ids (1,000 ids at 236x the samples: 4.2 s
  against 0.6 s). DuckDB only: the per-run filters run on DuckDB alone.
#}
{% macro file_id_in(column, ids) -%}
    {%- if target.type == 'spark' -%}
        {{ column }} in ({{ ids | join(', ') }})
    {%- else -%}
        list_contains([{{ ids | join(', ') }}]::bigint[], {{ column }})
    {%- endif -%}
{%- endmacro %}

{# the model's filter: the first batch's file ids (`false` when no run is pending); on Spark,
   where the model has no batches, every pending file #}
{% macro per_run_files_batch(column, lines, batch_files=none) -%}
    {%- if execute and target.type == 'duckdb' -%}
        {%- set batches = per_run_file_batches(lines, batch_files) -%}
        {{ _per_run_batch_filter(column, batches[0]) if batches else 'false' }}
    {%- elif target.type == 'spark' -%}
        {{ per_run_files_only(column) }}
    {%- else -%}
        true
    {%- endif -%}
{%- endmacro %}

{# post-hook: one insert per further batch, the model's compiled SQL with that batch's ids #}
{% macro per_run_insert_batches(column, lines, batch_files=none) %}
    {% if not execute %}{{ return('') }}{% endif %}
    {% set batches = per_run_file_batches(lines, batch_files) %}
    {% set first = _per_run_batch_filter(column, batches[0]) if batches else none %}
    {% if batches | length > 1 and first not in sql %}
        {% do exceptions.raise_compiler_error(this ~ ': the first batch filter is not in the compiled SQL') %}
    {% endif %}
    {% for ids in batches[1:] %}
        {% do run_query('insert into ' ~ this ~ ' by name ' ~ sql.replace(first, _per_run_batch_filter(column, ids))) %}
    {% endfor %}
    {{ return('') }}
{% endmacro %}
