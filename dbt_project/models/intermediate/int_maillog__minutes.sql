{{ config(**per_run_config()) }}
-- depends_on: {{ ref('int_run_fingerprints') }}, {{ ref('int_file_runs') }}, {{ ref('stg_maillog__minutes') }}

-- Maillog counts per run-minute (all of the run's maillog files, drain included): the sum of
-- each file's counts per minute, which the parser counts as it reads the file
-- (crates/maillog/src/assemble.rs; raw.maillog_minutes). What a line counts as is the
-- parser's `counts_as` (pflogsumm's definitions).

with

counts as (
    select
        file_runs.run_id,
        landed.minute_at,
        -- as int_maillog__lines marks a drain log
        lower(file_runs.path) like '%drain%' as is_drain_file,
        landed.lines,
        landed.received,
        landed.delivered,
        landed.deferred,
        landed.bounced,
        landed.rejected
    from (
        select *
        from {{ ref('stg_maillog__minutes') }}
        where {{ per_run_files_only('file_id') }}
    ) as landed
    inner join {{ ref('int_file_runs') }} as file_runs
        on landed.file_id = file_runs.file_id
),

final as (
    select
        run_id,
        minute_at,
        cast(sum(received) as bigint) as received,
        cast(sum(delivered) as bigint) as delivered,
        cast(sum(deferred) as bigint) as deferred,
        cast(sum(bounced) as bigint) as bounced,
        cast(sum(rejected) as bigint) as rejected,
        bool_or(is_drain_file) as from_drain_log
    from counts
    group by run_id, minute_at
)

select * from final
