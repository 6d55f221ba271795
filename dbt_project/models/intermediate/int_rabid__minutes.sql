{{ config(**per_run_config(folders=true)) }}
-- depends_on: {{ ref('int_run_fingerprints') }}

-- One row per printed rabid per-minute row: the mailbox side's client (rabid, from the same
-- package as postal, drains the mailboxes over POP, and IMAP with -i). Same clock rules as
-- postal's rows (int_postal__minutes, the same postal_family_minutes macro): minute_at is the
-- UTC start of the minute a row covers.
-- rabid 0.75 often prints no rows at all (docs/mailbox.md): the server log
-- (int_mailbox__minutes) is then the only per-minute source.

{{ postal_family_minutes('mailbox', ['imap_connections']) }}
