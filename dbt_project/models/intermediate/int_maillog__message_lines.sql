{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- Maillog lines that carry a queue id, each tagged with the message instance it belongs to.
-- Postfix reuses short queue ids: one id can name several messages in a run. An instance is
-- the queue id from its first line (smtpd/postscreen `client=`, pickup, cleanup) up to and
-- including its `removed` line; the next line with that id starts the next instance.

with

lines as (
    select * from {{ ref('int_maillog__lines') }}
    where queue_id is not null
        and {{ per_run_only('run_id') }}
),

final as (
    select
        *,
        1 + coalesce(
            count(case when kind = 'removed' then 1 end) over (
                partition by run_id, queue_id
                order by logged_at, file_id, line_no
                rows between unbounded preceding and 1 preceding
            ),
            0
        ) as message_instance
    from lines
)

select * from final
