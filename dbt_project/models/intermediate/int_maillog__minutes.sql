-- Maillog counts per run-minute (all of the run's maillog files, drain included).

select
    run_id,
    minute_at,
    sum(case when is_received then 1 else 0 end) as received,
    sum(case when is_delivered then 1 else 0 end) as delivered,
    sum(case when is_deferral then 1 else 0 end) as deferred,
    sum(case when is_bounced then 1 else 0 end) as bounced,
    sum(case when is_rejected then 1 else 0 end) as rejected,
    max(case when is_drain_file then 1 else 0 end) = 1 as from_drain_log
from {{ ref('int_maillog__lines') }}
where logged_at is not null
group by run_id, minute_at
