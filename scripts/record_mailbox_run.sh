#!/bin/bash
# Record one run of both directions at once (seed 003): postal injects over SMTP while rabid drains
# the same mailboxes over POP3 (and IMAP with --imap PCT), against the local Postfix and Dovecot
# (run scripts/setup_postfix_bench.sh, then scripts/setup_dovecot_bench.sh). It calls
# `mtabench record` with rabid as an --also load beside postal (or alone with --rabid-only), so the
# run folder holds postal.csv, rabid.csv, vmstat/iostat/queue samples, maillog.gz and Dovecot's log
# (dovecot.log.gz) cut for the run window, and run.toml. Loopback only, bounded by --duration.
#
# usage: scripts/record_mailbox_run.sh RUN_ID [--archive DIR] [--duration S] [--drain S]
#            [--imap PCT] [--smtp-rate N] [--pop-rate N] [--threads N] [--rabid-only] [--dry-run]
#            [-- more mtabench record options, e.g. --label L --set param=value]
# rates are per minute: postal -r (messages), rabid -r (connections; man rabid: the user list holds
# "address password" per line, written here from users.txt and the Dovecot password). Run as root.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=${BENCH_ROOT:-/srv/bench}

[ $# -ge 1 ] || { sed -n '2,13p' "$0" >&2; exit 2; }
run_id=$1; shift
archive=archive duration=150 drain=60 imap=0 smtp_rate=1200 pop_rate=600 threads=2 rabid_only=0
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --archive) archive=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --drain) drain=$2; shift 2 ;;
    --imap) imap=$2; shift 2 ;;
    --smtp-rate) smtp_rate=$2; shift 2 ;;
    --pop-rate) pop_rate=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --rabid-only) rabid_only=1; shift ;;
    --dry-run) extra+=(--dry-run); shift ;;
    --) shift; extra+=("$@"); break ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

for f in "$BASE/users.txt" "$BASE/mail-password" "$BASE/log/dovecot.log"; do
  [ -e "$f" ] || { echo "$f missing: run scripts/setup_postfix_bench.sh and scripts/setup_dovecot_bench.sh" >&2; exit 1; }
done
# rabid's user list: one "user password" pair per line (the Dovecot passwd-file's accounts)
pop_users=$BASE/pop-users.txt
pw=$(cat "$BASE/mail-password")
(umask 077 && sed "s|\$| $pw|" "$BASE/users.txt" > "$pop_users")

rabid=(rabid -p "$threads" -r "$pop_rate")
[ "$imap" -gt 0 ] && rabid+=(-i "$imap")
rabid+=(127.0.0.1 "$pop_users")
postal=(postal -t "$threads" -r "$smtp_rate" -m 4 127.0.0.1 "$BASE/users.txt")
common=(--archive "$archive" --duration "$duration" --drain "$drain" --log2 "$BASE/log/dovecot.log")
notes="mailbox side: postal (SMTP in) and rabid (POP out, IMAP share ${imap} %) at once; scripts/record_mailbox_run.sh"
if [ "$rabid_only" = 1 ]; then
  notes="mailbox side only: rabid alone (POP out, IMAP share ${imap} %), no SMTP load; scripts/record_mailbox_run.sh --rabid-only"
  exec uv run --frozen mtabench record "$run_id" "${common[@]}" --notes "$notes" "${extra[@]}" -- "${rabid[@]}"
fi
exec uv run --frozen mtabench record "$run_id" "${common[@]}" --notes "$notes" --also "${rabid[*]}" "${extra[@]}" -- "${postal[@]}"
