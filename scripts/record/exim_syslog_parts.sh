#!/bin/bash
# Record Exim 4.96 logging to syslog (exim_syslog.sh's chroot and configuration, syslog_timestamp
# and syslog_duplication at their defaults) with the entries Exim writes to syslog in parts: one
# longer than 870 bytes as `[1/2] ...`, `[2/2] ...`, one of several lines (a reject log entry
# with the message's headers) as `[1\N] ...`, `[2\N] ...`. Root.
#   exim_syslog_parts.sh OUT_DIR
# Load, smtp-source (Postfix's), bounded: messages to 80 recipients each (r, 2r, ..., 80r
# @bench.test, local Maildirs), logged with `log_selector = +received_recipients`, so that each
# arrival runs past 870 bytes; and messages from spam@bench.test, which acl_smtp_data refuses
# after DATA, so that the reject log's copy carries their headers.
set -euo pipefail
OUT=${1:?usage: exim_syslog_parts.sh OUT_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STAMP=true
# shellcheck source=exim_syslog.sh
source "$HERE/exim_syslog.sh"
WIDE=20   # messages to 80 recipients
SPAM=5    # messages refused after DATA

parts_conf() {
    syslog_conf | awk '
        /^log_file_path = / { print; print "log_selector = +received_recipients"; next }
        /^acl_smtp_rcpt = / { print; print "acl_smtp_data = acl_check_data"; next }
        /^begin routers$/ {
            print "acl_check_data:\n  deny    senders = spam@bench.test\n          message = message refused\n  accept\n"
        }
        { print }'
}

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# smtp-source's recipients: the address with a number put in front (r, 2r, ..., 80r)
grep -q '^80r:' "$DIR/etc/exim4/bench_users" ||
    { echo "r: r"; for i in $(seq 2 80); do echo "${i}r: ${i}r"; done; } >>"$DIR/etc/exim4/bench_users"
start_syslog_exim parts_conf
START=$(utc)
net exim timeout 120 smtp-source -s 2 -m "$WIDE" -r 80 -f user1@bench.test -t r@bench.test 127.0.0.1:25 \
    >"$OUT/smtp-source-wide.txt" 2>&1 || echo "smtp-source (wide): status $?" >>"$OUT/smtp-source-wide.txt"
for _ in $(seq 1 "$SPAM"); do
    net exim timeout 30 smtp-source -m 1 -f spam@bench.test -t user2@bench.test 127.0.0.1:25 || echo "status $?"
done >"$OUT/smtp-source-spam.txt" 2>&1
# the deliveries finish (nothing is left to defer here), then rsyslogd writes out on SIGTERM
for _ in $(seq 1 60); do [ "$(queue_busy)" -eq 0 ] && break; sleep 1; done
stop_exim
kill "$SINK" 2>/dev/null || true
wait "$SINK" 2>/dev/null || true
mkdir -p "$OUT/run"
gzip -9nc "$DIR/var/log/maillog" >"$OUT/run/maillog.gz"
cp "$DIR/etc/exim4/exim4.conf" "$DIR/etc/rsyslog.conf" "$OUT/"
printf 'start_utc = %s\nend_utc = %s\nexim = %s\n' "$START" "$(utc)" "$MTA_VERSION" >"$OUT/run.txt"
# oracle: eximstats over the file as it is (it skips every part of a split entry: the long
# arrivals, and the reject log's copies of the refusals after DATA)
gunzip -c "$OUT/run/maillog.gz" >"$DIR/tmp/maillog"
chroot "$DIR" eximstats -nr -t0 -h60 /tmp/maillog >"$OUT/eximstats.txt"
rm -f "$DIR/tmp/maillog"
echo "recorded into $OUT"
