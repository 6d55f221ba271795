{#
  Column descriptions are not written to Spark's catalog: on a Delta table each is an ALTER
  TABLE, that is a commit and a Spark job (a mart's 20 columns: 20 commits, every build of an
  incremental mart). Nothing reads them there; the DuckDB engine's marts keep theirs.
#}
{% macro spark__persist_docs(relation, model, for_relation, for_columns) -%}
{%- endmacro %}
