#!/bin/bash
# Record two sendmail 8.17 runs (Debian 12 sendmail-bin) that differ in one setting:
# ConnectionRateThrottle (Debian's 15 per second, then 0 = off).
#   sendmail.sh OUT_DIR [DURATION_S] [RATE_PER_MIN]
# OUT_DIR gets sendmail-crt-15/ and sendmail-crt-0/; ORACLE_DIR (default tests/fixtures/oracles)
# gets each run's `mailstats -p` (cleared before the run, printed right after it).
# sendmail logs only through syslog: rsyslogd runs inside the chroot with mail.* to /var/log/maillog.
# Needs root; installs sendmail inside /work/chroots/sendmail (chroot.sh), never on the host.
set -euo pipefail
THREADS=${THREADS:-6}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ORACLE_DIR=${ORACLE_DIR:-$HERE/../../tests/fixtures/oracles}
# shellcheck source=bench_run.sh
source "$HERE/bench_run.sh"

MTA_NAME=sendmail
MTA_LABEL=sendmail
DOMAIN=bench.test
KNOWN=200
UNKNOWN=6
LOG_FILES=(/var/log/maillog:maillog)
LOG_TIMESTAMP_FORMAT=$MAILLOG_TIMESTAMP_FORMAT
QUEUE_COLUMNS="incoming = tf* files (control files being written), active = qf* files in /var/spool/mqueue (every queued message), deferred 0 (sendmail keeps deferred mail in the same directory), maildrop = qf* files in /var/spool/mqueue-client"
MTA_DELIVERY="local mailer (sensible-mda, procmail) to mbox /var/mail/<user>, $KNOWN system users user1..user$KNOWN, domain $DOMAIN in local-host-names; nouser1..nouser$UNKNOWN are rejected at RCPT (User unknown)"

mq() { echo "$(chroot_dir "$MTA_NAME")/var/spool/$1"; }
count() { find "$(mq "$1")" -maxdepth 1 -name "$2*" 2>/dev/null | wc -l; }
queue_counts() { echo "$(count mqueue tf),$(count mqueue qf),0,$(count mqueue-client qf)"; }
queue_busy() { echo $(($(count mqueue qf) + $(count mqueue-client qf))); }

sendmail_mc() {
    local throttle=$1
    # Debian's sendmail.mc with three changes: resolvable sender domains not required (bench.test
    # has no DNS), no 1 s greet pause (it would cap each postal thread at one message a second),
    # and the connection rate throttle this pair of runs compares
    sed -e "s/^define(\`confCONNECTION_RATE_THROTTLE', \`15')dnl/define(\`confCONNECTION_RATE_THROTTLE', \`$throttle')dnl/" \
        -e "/^FEATURE(\`greet_pause'/d" \
        -e "s/^MAILER_DEFINITIONS/FEATURE(\`accept_unresolvable_domains')dnl\ndefine(\`confDOMAIN_NAME', \`mx-sendmail.$DOMAIN')dnl\nMAILER_DEFINITIONS/" \
        "$(chroot_dir sendmail)/etc/mail/sendmail.mc.debian"
}

setup() {
    create sendmail sendmail-bin sendmail-cf sendmail-base sensible-mda m4 make rsyslog procmail
    local dir
    dir=$(chroot_dir sendmail)
    [ -f "$dir/etc/mail/sendmail.mc.debian" ] || cp "$dir/etc/mail/sendmail.mc" "$dir/etc/mail/sendmail.mc.debian"
    grep -qx "$DOMAIN" "$dir/etc/mail/local-host-names" || echo "$DOMAIN" >>"$dir/etc/mail/local-host-names"
    grep -q "mx-sendmail" "$dir/etc/hosts" || echo "127.0.0.1 mx-sendmail.$DOMAIN mx-sendmail $DOMAIN" >>"$dir/etc/hosts"
    # no DNS in the namespace: a DNS lookup of bench.test would only ever time out (4.4.3, queued)
    cp "$dir/etc/mail/service.switch-nodns" "$dir/etc/mail/service.switch"
    if ! chroot "$dir" getent passwd user1 >/dev/null; then
        for i in $(seq 1 "$KNOWN"); do echo "user$i:x:$((20000 + i)):100::/nonexistent:/usr/sbin/nologin"; done |
            chroot "$dir" newusers
    fi
    # rsyslogd without its rate limit, which would drop the daemon's throttle lines
    rsyslog_maillog "$dir"
    touch "$dir/var/lib/sendmail/sendmail.st" "$dir/var/lib/sendmail/sm-client.st"
    chroot "$dir" chown smmta:smmsp /var/lib/sendmail/sendmail.st
    chroot "$dir" chmod 0660 /var/lib/sendmail/sendmail.st
    write_users "$dir/root/users.txt" "$KNOWN" "$UNKNOWN" "$DOMAIN"
}

start_sendmail() {
    local throttle=$1 dir
    dir=$(chroot_dir sendmail)
    sendmail_mc "$throttle" >"$dir/etc/mail/sendmail.mc"
    chroot "$dir" sh -c 'cd /etc/mail && m4 sendmail.mc >sendmail.cf'
    up sendmail
    run sendmail mkdir -p /run/sendmail/mta /run/sendmail/msp
    run sendmail chown -R smmta:smmsp /run/sendmail
    run sendmail /usr/sbin/rsyslogd
    sleep 1
    run sendmail /usr/sbin/sendmail -bd -q1m
    sleep 3
}

record() {
    local slug=$1 throttle=$2 settings=$3 notes=$4
    local run_dir=$OUT/sendmail-$slug dir oracle=$ORACLE_DIR/sendmail-$slug
    dir=$(chroot_dir sendmail)
    start_sendmail "$throttle"
    MTA_VERSION=$(run sendmail /usr/sbin/sendmail -d0.1 -bt </dev/null | sed -n 's/^Version \([^ ]*\).*/\1/p')
    run sendmail /usr/sbin/mailstats -p >/dev/null # clears the statistics: the oracle covers this run only
    bench_run "$run_dir" "$DUR" "$RATE" "$THREADS" "$dir/root/users.txt" "$settings" "$notes"
    mkdir -p "$oracle"
    run sendmail /usr/sbin/mailstats -p >"$oracle/mailstats-p.txt"
    down sendmail
    cp "$dir/etc/mail/sendmail.mc" "$run_dir/sendmail.mc"
}

# sourced (tests/fixtures/recorded/sendmail-relay-smarthost/record.sh), it only defines the above
[ "${BASH_SOURCE[0]}" = "$0" ] || return 0
OUT=${1:?usage: sendmail.sh OUT_DIR [DURATION_S] [RATE_PER_MIN]}
DUR=${2:-240}
RATE=${3:-1200}
setup
rm -rf "$(chroot_dir sendmail)"/var/spool/{mqueue,mqueue-client}/* "$(chroot_dir sendmail)/var/log/maillog"
record crt-15 15 'confCONNECTION_RATE_THROTTLE = "15"  # Debian default (ConnectionRateThrottle=15 per second)' \
    "Debian sendmail.mc defaults (ConnectionRateThrottle 15/s) without greet_pause, plus accept_unresolvable_domains. $THREADS postal threads, rate cap $RATE/min (above 15 connections a second), body 0-4 KB, 1 message per connection; $UNKNOWN of $((KNOWN + UNKNOWN)) recipients unknown (550 User unknown at RCPT)."
record crt-0 0 'confCONNECTION_RATE_THROTTLE = "0"  # default/base value: "15" (0 = no throttle)' \
    "Changed setting: ConnectionRateThrottle 0 (no throttle). Otherwise as sendmail-crt-15."
