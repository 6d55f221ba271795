#!/bin/bash
# Record notqmail 1.09 logging through splogger to syslog, the setup without daemontools:
# `qmail-start ./Maildir/ splogger qmail`, and tcpserver's lines through `splogger smtpd`, with
# rsyslogd writing mail.* to /var/log/maillog in the BSD format (`Nov 28 01:02:03 host qmail:
# 1764291723.123456 new msg 12345`). The chroot is qmail.sh's (built by `qmail.sh setup`) plus
# rsyslog; one bounded postal run, kept whole as a fixture. Needs root.
#   qmail_splogger.sh OUT_DIR [DURATION_S] [RATE_PER_MIN]
# Recipients: user1..user$USERS and nouser1..3 @bench.test (delivered; bounced by qmail-local),
# user1..2, tempfail1 and reject1 @sink.test (smtproutes to an SMTP sink on 127.0.0.1:2526
# answering 250, 450 and 550: scripts/record/smtp_sink.py), defer1..2 @defer.test (smtproutes to
# 127.0.0.1:2599, where nothing listens). queuelifetime 60 and a SIGALRM to qmail-send every 30 s
# (every queued message retried) turn the deferrals into failures within the run.
set -euo pipefail
OUT=${1:?usage: qmail_splogger.sh OUT_DIR [DURATION_S] [RATE_PER_MIN]}
DUR=${2:-150}
RATE=${3:-150}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=qmail.sh
source "$HERE/qmail.sh"

USERS=60
THREADS=2
DRAIN_MAX_S=300
SINK_PORT=2526
LOG_FILES=(/var/log/maillog:maillog)
LOG_KEYS=maillog
LOG_TIMESTAMP_FORMAT="BSD syslog 'Mmm dd HH:MM:SS' (rsyslog RSYSLOG_TraditionalFileFormat), UTC; after the tag, splogger's own stamp: epoch seconds.microseconds"
MTA_DELIVERY="qmail-local to ./Maildir/ of user1..user$USERS@$DOMAIN (nouser1..3 accepted and bounced); qmail-remote through smtproutes to an SMTP sink on 127.0.0.1:$SINK_PORT (sink.test) and to a closed port 127.0.0.1:2599 (defer.test)"

# the whole log: emptied before rsyslogd starts, so that qmail-send's first lines are kept
mark_logs() { local spec; for spec in "${LOG_FILES[@]}"; do LOG_START[$spec]=0; done; }

start_mta() {
    up qmail
    rm -f "$D/var/log/maillog"
    rsyslog_maillog "$D" RSYSLOG_TraditionalFileFormat
    run qmail rsyslogd
    setsid "$HERE/chroot.sh" run qmail bash -c '
        cd /var/qmail
        exec env - PATH=/var/qmail/bin:/usr/bin:/bin qmail-start ./Maildir/ splogger qmail' \
        </dev/null >/dev/null 2>&1 &
    # shellcheck disable=SC2016 # expanded by the inner bash
    setsid "$HERE/chroot.sh" run qmail bash -c '
        qd=$(id -u qmaild); ng=$(getent group nofiles | cut -d: -f3)
        exec env - PATH=/var/qmail/bin:/usr/bin:/bin \
            tcpserver -v -R -H -l mx.bench.test -x /etc/tcp.smtp.cdb -c 40 -u "$qd" -g "$ng" \
                127.0.0.1 25 /var/qmail/bin/qmail-smtpd 2>&1 | /var/qmail/bin/splogger smtpd' \
        </dev/null >/dev/null 2>&1 &
    wait_smtp qmail
}

qmail_send_pid() {
    local p
    for p in $(pids qmail); do
        [ "$(cat /proc/"$p"/comm 2>/dev/null)" = qmail-send ] && echo "$p"
    done
    return 0
}

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
c=$D$Q/control
printf 'sink.test:127.0.0.1:%s\ndefer.test:127.0.0.1:2599\n' "$SINK_PORT" >"$c/smtproutes"
echo 60 >"$c/queuelifetime"
rm -f "$c/concurrencylocal"
[ "$(queue_busy)" -eq 0 ] || { echo "qmail's queue is not empty: $(queue_left)" >&2; exit 1; }
write_users "$D/root/users.txt" "$USERS" 3 "$DOMAIN"
printf '%s\n' user1@sink.test user2@sink.test tempfail1@sink.test reject1@sink.test \
    defer1@defer.test defer2@defer.test >>"$D/root/users.txt"

start_mta
start_sink qmail "$OUT/sink.log" "$SINK_PORT"
# every queued message retried every 30 s, so that the queue lifetime runs out within the run
(
    while sleep 30; do
        p=$(qmail_send_pid)
        [ -n "$p" ] && kill -ALRM "$p" 2>/dev/null
    done
) &
ALRM=$!
MTA_LISTEN="127.0.0.1:25 in a network namespace of its own (chroot $D; tcpserver -c 40)"
bench_load "$OUT/run" "$DUR" "$RATE" "$THREADS" "$D/root/users.txt"
kill "$ALRM" "$SINK" 2>/dev/null || true
wait "$ALRM" "$SINK" 2>/dev/null || true
stop_mta
bench_record 'splogger = "qmail"  # qmail-start ./Maildir/ splogger qmail: qmail-send logs through syslog' \
    "notqmail logging through splogger and rsyslog (traditional format). $THREADS postal threads, rate cap $RATE/min, body 0-4 KB; queuelifetime 60 and SIGALRM every 30 s."
{
    ( cd "$c" && for f in *; do printf '%s: %s\n' "$f" "$(tr '\n' ' ' <"$f")"; done )
    echo "qmail-start ./Maildir/ splogger qmail"
    echo "tcpserver -v -R -H -l mx.bench.test -x /etc/tcp.smtp.cdb -c 40 -u qmaild -g nofiles 127.0.0.1 25 qmail-smtpd 2>&1 | splogger smtpd"
} >"$OUT/control.txt"
cp "$D/etc/rsyslog.conf" "$OUT/rsyslog.conf"
rm -f "$c/smtproutes" "$c/queuelifetime"
echo "recorded into $OUT"
