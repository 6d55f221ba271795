{#
  pflogsumm's reading of a maillog line's program: the Postfix daemon, the smtps/ and
  submission/ prefixes stripped (tests/test_maillog_parser.py), as the parser reads it when
  it decides what a line counts as (crates/maillog/src/classify.rs). stg_maillog__lines
  exposes it as `daemon`.
#}
{% macro postfix_daemon(program) -%}
    regexp_replace({{ program }}, '^postfix[^/]*/((smtps|submission)/)?', '')
{%- endmacro %}

{% macro is_postfix(program) -%}
    ({{ program }} like 'postfix%')
{%- endmacro %}
