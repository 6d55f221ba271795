#!/bin/bash
# Record two Exim 4.96 runs (Debian 12 exim4-daemon-light) that differ in one setting: queue_only.
#   exim.sh OUT_DIR [DURATION_S] [RATE_PER_MIN]
# OUT_DIR gets exim-queue-only-false/ and exim-queue-only-true/ (samples/mtas in the project),
# and ORACLE_DIR (default tests/fixtures/oracles) each run's eximstats output.
# Needs root; installs Exim inside /work/chroots/exim (chroot.sh), never on the host.
set -euo pipefail
THREADS=${THREADS:-4}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ORACLE_DIR=${ORACLE_DIR:-$HERE/../../tests/fixtures/oracles}
# shellcheck source=bench_run.sh
source "$HERE/bench_run.sh"

MTA_NAME=exim
MTA_LABEL=exim
DOMAIN=bench.test
KNOWN=200
UNKNOWN=6
LOG_FILES=(/var/log/exim4/mainlog:mainlog /var/log/exim4/rejectlog:rejectlog /var/log/exim4/paniclog:paniclog)
LOG_TIMESTAMP_FORMAT="Exim 'YYYY-MM-DD HH:MM:SS', UTC (timezone = UTC)"
QUEUE_COLUMNS="incoming = -D data files without their -H yet (being received), active = -H files (messages on the queue) under /var/spool/exim4/input, deferred and maildrop 0 (Exim has no such queues)"
MTA_DELIVERY="appendfile Maildir under /var/vmail/<user>/Maildir, $KNOWN users user1..user$KNOWN in domain $DOMAIN (lsearch /etc/exim4/bench_users); nouser1..nouser$UNKNOWN are rejected at RCPT (verify = recipient, Unrouteable address)"

spool() { echo "$(chroot_dir "$MTA_NAME")/var/spool/exim4/input"; }
queue_counts() {
    local h d
    h=$(find "$(spool)" -name '*-H' 2>/dev/null | wc -l)
    d=$(find "$(spool)" -name '*-D' 2>/dev/null | wc -l)
    echo "$((d > h ? d - h : 0)),$h,0,0"
}
queue_busy() { find "$(spool)" -name '*-H' 2>/dev/null | wc -l; }

exim_conf() {
    local queue_only=$1
    cat <<EOF
# mtabench Exim: local Maildir delivery for $DOMAIN, nothing relayed, no DNS
primary_hostname = mx-exim.$DOMAIN
domainlist local_domains = $DOMAIN
daemon_smtp_ports = 25
local_interfaces = 127.0.0.1
timezone = UTC
keep_environment =
tls_advertise_hosts =
host_lookup =
rfc1413_hosts =
smtp_accept_max = 50
queue_only = $queue_only
acl_smtp_rcpt = acl_check_rcpt
log_file_path = /var/log/exim4/%slog
spool_directory = /var/spool/exim4
exim_user = Debian-exim
exim_group = Debian-exim
never_users = root
received_header_text = Received: from \$sender_rcvhost by \$primary_hostname id \$message_exim_id

begin acl
acl_check_rcpt:
  deny    domains = !+local_domains
          message = relay not permitted
  require verify = recipient
  accept

begin routers
bench_users:
  driver = accept
  domains = +local_domains
  local_parts = lsearch;/etc/exim4/bench_users
  transport = bench_maildir

begin transports
bench_maildir:
  driver = appendfile
  directory = /var/vmail/\$local_part_data/Maildir
  maildir_format
  create_directory
  user = Debian-exim
  group = Debian-exim
  mode = 0600

begin retry
*   *   F,2h,15m; G,16h,1h,1.5; F,4d,6h
EOF
}

setup() {
    create exim exim4-daemon-light exim4-base
    local dir
    dir=$(chroot_dir exim)
    for i in $(seq 1 "$KNOWN"); do echo "user$i: user$i"; done >"$dir/etc/exim4/bench_users"
    mkdir -p "$dir/var/vmail"
    chroot "$dir" chown Debian-exim:Debian-exim /var/vmail
    write_users "$dir/root/users.txt" "$KNOWN" "$UNKNOWN" "$DOMAIN"
}

start_exim() {
    local queue_only=$1 dir
    dir=$(chroot_dir exim)
    exim_conf "$queue_only" >"$dir/etc/exim4/exim4.conf"
    up exim
    run exim mkdir -p /run/exim4
    run exim chown Debian-exim:Debian-exim /run/exim4
    run exim /usr/sbin/exim4 -bV -C /etc/exim4/exim4.conf >/dev/null
    # the daemon plus a queue runner every 30 s (the only runner when queue_only is set)
    run exim /usr/sbin/exim4 -bd -q30s
    sleep 2
}

stop_exim() { down exim; }

record() {
    local slug=$1 queue_only=$2 settings=$3 notes=$4
    local run_dir=$OUT/exim-$slug
    start_exim "$queue_only"
    MTA_VERSION=$(run exim /usr/sbin/exim4 -bV | sed -n '1s/^Exim version \([^ ]*\).*/\1/p')
    bench_run "$run_dir" "$DUR" "$RATE" "$THREADS" "$(chroot_dir exim)/root/users.txt" "$settings" "$notes"
    stop_exim
    # oracle: eximstats over the run's own mainlog cut, inside the chroot (exim4-base's copy)
    local dir oracle=$ORACLE_DIR/exim-$slug
    dir=$(chroot_dir exim)
    mkdir -p "$oracle"
    gunzip -c "$run_dir/mainlog.gz" >"$dir/tmp/mainlog"
    # -h60: the received / delivered histograms per minute
    chroot "$dir" eximstats -nr -t0 -h60 /tmp/mainlog >"$oracle/eximstats.txt"
    rm -f "$dir/tmp/mainlog"
    cp "$dir/etc/exim4/exim4.conf" "$run_dir/exim4.conf"
}

# sourced (scripts/record/exim_syslog.sh), it only defines the functions above
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    OUT=${1:?usage: exim.sh OUT_DIR [DURATION_S] [RATE_PER_MIN]}
    DUR=${2:-180}
    RATE=${3:-900}
    setup
    # start each run with an empty queue and fresh logs
    rm -rf "$(chroot_dir exim)/var/spool/exim4/input"/* "$(chroot_dir exim)/var/log/exim4"/*
    record queue-only-false false 'queue_only = "false"  # default: each message delivered by the receiving process' \
        "Exim default: each message delivered right after it is received; a queue runner every 30 s (-q30s). $THREADS postal threads, rate cap $RATE/min, body 0-4 KB, 1 message per connection; $UNKNOWN of $((KNOWN + UNKNOWN)) recipients unknown (550 at RCPT)."
    record queue-only-true true 'queue_only = "true"  # default/base value: "false"' \
        "Changed setting: queue_only = true, so messages wait for the queue runner started every 30 s (-q30s; queue_run_max 5 by default). Otherwise as exim-queue-only-false."
fi
