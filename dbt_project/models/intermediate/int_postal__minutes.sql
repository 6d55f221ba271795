{{ config(**per_run_config(folders=true)) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- One row per printed postal per-minute row. minute_at is the start (UTC) of the minute the
-- counters cover: postal labels a row with the clock at the END of its interval.
-- The SMTP side only (postal, bhm); rabid's rows are in int_rabid__minutes. The shape is the
-- postal_family_minutes macro's (macros/postal_family.sql), shared with int_rabid__minutes.

{{ postal_family_minutes('smtp', ['ssl_connections']) }}
