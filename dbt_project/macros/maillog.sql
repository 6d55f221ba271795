{#
  pflogsumm's reading of a maillog line's program: the Postfix daemon, the smtps/ and
  submission/ prefixes stripped (tests/test_maillog_parser.py). stg_maillog__lines exposes
  it as `daemon`; int_maillog__lines inlines it where a line's kind needs it, so the regex
  runs on those lines only, not on every line (issue 18, "Scale").
#}
{% macro postfix_daemon(program) -%}
    regexp_replace({{ program }}, '^postfix[^/]*/((smtps|submission)/)?', '')
{%- endmacro %}

{% macro is_postfix(program) -%}
    ({{ program }} like 'postfix%')
{%- endmacro %}
