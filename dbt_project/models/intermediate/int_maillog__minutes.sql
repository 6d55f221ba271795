{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}

-- Maillog counts per run-minute (all of the run's maillog files, drain included).

select
    run_id,
    minute_at,
    count(case when is_received then 1 end) as received,
    count(case when is_delivered then 1 end) as delivered,
    count(case when is_deferral then 1 end) as deferred,
    count(case when is_bounced then 1 end) as bounced,
    count(case when is_rejected then 1 end) as rejected,
    max(case when is_drain_file then 1 else 0 end) = 1 as from_drain_log
from {{ ref('int_maillog__lines') }}
where logged_at is not null
    and {{ per_run_files_only('file_id') }}
group by run_id, minute_at
