#!/bin/bash
# Record Exim 4.96 (Debian 12) logging to syslog only: `log_file_path = syslog`, rsyslogd writing
# mail.* to /var/log/maillog in the BSD format (`Nov 28 01:02:03 host exim[1234]: ...`), with
# syslog_timestamp as given (true, the default: Exim's own stamp after the tag; false: none) and
# syslog_duplication at its default (a line written to both the main and the reject log reaches
# syslog twice). exim.sh's configuration and chroot, plus rsyslog; one bounded postal run. Root.
#   exim_syslog.sh OUT_DIR true|false [DURATION_S] [RATE_PER_MIN]
# Recipients: user1..user$KNOWN and nouser1..3 @bench.test (delivered; rejected at RCPT), user1..2,
# tempfail1 and reject1 @sink.test (relayed to an SMTP sink on 127.0.0.1:2526 answering 250, 450
# and 550: scripts/record/smtp_sink.py), defer1..2 @defer.test (relayed to 127.0.0.2:2599, where
# nothing listens). The retry rule F,1m,20s for both remote domains turns their deferrals into
# failures within the run (a queue runner every 30 s).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=exim.sh
source "$HERE/exim.sh"

KNOWN=60
THREADS=2
DRAIN_MAX_S=180
SINK_PORT=2526
DIR=$(chroot_dir exim)
LOG_FILES=(/var/log/maillog:maillog)
LOG_KEYS=maillog
LOG_TIMESTAMP_FORMAT="BSD syslog 'Mmm dd HH:MM:SS' (rsyslog RSYSLOG_TraditionalFileFormat), UTC"
[ "$STAMP" = false ] || LOG_TIMESTAMP_FORMAT+="; after the tag, Exim's own 'YYYY-MM-DD HH:MM:SS' (syslog_timestamp)"
MTA_DELIVERY="appendfile Maildir for user1..user$KNOWN@$DOMAIN (nouser1..3 rejected at RCPT); manualroute + smtp transport to 127.0.0.1:$SINK_PORT (sink.test, an SMTP sink) and 127.0.0.2:2599 (defer.test, nothing listening)"
# frozen bounces (to senders that cannot be reached) stay queued: the drain waits for the rest
queue_busy() { run exim /usr/sbin/exim4 -bpr | awk '/^ *[0-9]+[smhd] / && !/frozen/' | wc -l; }
mark_logs() { local spec; for spec in "${LOG_FILES[@]}"; do LOG_START[$spec]=0; done; }

# exim.sh's configuration, logging to syslog and relaying sink.test and defer.test to loopback ports
syslog_conf() {
    exim_conf false | awk -v stamp="$STAMP" -v sink="$SINK_PORT" '
        NR == 1 { print "# mtabench Exim logging to syslog: Maildir for bench.test; sink.test, defer.test to loopback ports"; next }
        /^log_file_path = / {
            print "log_file_path = syslog"
            if (stamp == "false") print "syslog_timestamp = false"
            next
        }
        /^domainlist local_domains/ { print; print "domainlist relay_to_domains = sink.test : defer.test"; next }
        /^  deny    domains = !\+local_domains$/ { print "  deny    domains = !+local_domains : !+relay_to_domains"; next }
        /^bench_users:$/ {
            print "remote:\n  driver = manualroute\n  domains = +relay_to_domains\n  transport = remote_smtp"
            # defer.test on an address of its own: Exim passes messages waiting for a host down
            # an open connection to that host whatever the port
            print "  route_list = defer.test 127.0.0.2 ; sink.test 127.0.0.1\n  self = send\n"
        }
        /^begin retry$/ {
            print "remote_smtp:\n  driver = smtp\n  allow_localhost"
            print "  port = ${if eq{$domain}{defer.test}{2599}{" sink "}}\n"
            print; print "sink.test   *   F,1m,20s\ndefer.test  *   F,1m,20s"; next
        }
        { print }'
}

# an empty spool and log, the configuration that function CONF prints, rsyslogd, the SMTP sink
# (writing OUT/sink.log) and the daemon with a queue runner every 30 s
start_syslog_exim() {
    local conf=$1
    rm -rf "$DIR"/var/spool/exim4/{input,msglog,db}/* "$DIR"/var/log/exim4/* "$DIR/var/log/maillog"
    "$conf" >"$DIR/etc/exim4/exim4.conf"
    up exim
    rsyslog_maillog "$DIR" RSYSLOG_TraditionalFileFormat
    run exim rsyslogd
    start_sink exim "$OUT/sink.log" "$SINK_PORT"
    run exim mkdir -p /run/exim4
    run exim chown Debian-exim:Debian-exim /run/exim4
    run exim /usr/sbin/exim4 -bV -C /etc/exim4/exim4.conf >/dev/null
    run exim /usr/sbin/exim4 -bd -q30s
    sleep 2
    MTA_VERSION=$(run exim /usr/sbin/exim4 -bV | sed -n '1s/^Exim version \([^ ]*\).*/\1/p')
}

# sourced (scripts/record/exim_syslog_parts.sh), it only defines the functions above
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0
OUT=${1:?usage: exim_syslog.sh OUT_DIR true|false [DURATION_S] [RATE_PER_MIN]}
STAMP=${2:?usage: exim_syslog.sh OUT_DIR true|false [DURATION_S] [RATE_PER_MIN]}
DUR=${3:-120}
RATE=${4:-180}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
write_users "$DIR/root/users.txt" "$KNOWN" 3 "$DOMAIN"
printf '%s\n' user1@sink.test user2@sink.test tempfail1@sink.test reject1@sink.test \
    defer1@defer.test defer2@defer.test >>"$DIR/root/users.txt"
start_syslog_exim syslog_conf
bench_load "$OUT/run" "$DUR" "$RATE" "$THREADS" "$DIR/root/users.txt"
run exim /usr/sbin/exim4 -bp >"$OUT/queue-at-end.txt"
kill "$SINK" 2>/dev/null || true
wait "$SINK" 2>/dev/null || true
# rsyslogd writes out its last lines on SIGTERM (down)
stop_exim
bench_record "log_file_path = \"syslog\"  # syslog_timestamp = $STAMP, syslog_duplication default (true)" \
    "Exim logging to syslog only (rsyslog, traditional format). $THREADS postal threads, rate cap $RATE/min, body 0-4 KB; a queue runner every 30 s."
cp "$DIR/etc/exim4/exim4.conf" "$DIR/etc/rsyslog.conf" "$OUT/"
# oracle: eximstats inside the chroot. It strips a syslog prefix itself but reads the time from
# Exim's own stamp: without one (syslog_timestamp = false) the syslog stamp stands in for it
if [ "$STAMP" = false ]; then
    gunzip -c "$OUT/run/maillog.gz" | awk -v y="$(date -u +%Y)" '{
        m = index("JanFebMarAprMayJunJulAugSepOctNovDec", $1)
        printf "%s-%02d-%02d %s %s\n", y, (m + 2) / 3, $2, $3, substr($0, index($0, "]: ") + 3) }' >"$DIR/tmp/maillog"
else
    gunzip -c "$OUT/run/maillog.gz" >"$DIR/tmp/maillog"
fi
chroot "$DIR" eximstats -nr -t0 -h60 /tmp/maillog >"$OUT/eximstats.txt"
rm -f "$DIR/tmp/maillog"
echo "recorded into $OUT"
