#!/bin/bash
# Record two OpenSMTPD 6.8 runs (Debian 12 opensmtpd) that differ in one queue setting:
# `queue compression` off (the default), then on.
#   opensmtpd.sh OUT_DIR [DURATION_S] [RATE_PER_MIN]
# OUT_DIR gets opensmtpd-queue-compression-off/ and opensmtpd-queue-compression-on/.
# OpenSMTPD logs through syslog: rsyslogd runs inside the chroot with mail.* to /var/log/maillog.
# Needs root; installs OpenSMTPD inside /work/chroots/opensmtpd (chroot.sh), never on the host.
set -euo pipefail
OUT=${1:?usage: opensmtpd.sh OUT_DIR [DURATION_S] [RATE_PER_MIN]}
DUR=${2:-240}
RATE=${3:-900}
THREADS=${THREADS:-4}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench_run.sh
source "$HERE/bench_run.sh"

MTA_NAME=opensmtpd
MTA_LABEL=opensmtpd
DOMAIN=bench.test
KNOWN=200
UNKNOWN=6
LOG_FILES=(/var/log/maillog:maillog)
LOG_TIMESTAMP_FORMAT=$MAILLOG_TIMESTAMP_FORMAT
QUEUE_COLUMNS="incoming = message folders under /var/spool/smtpd/incoming (being received), active = message folders under /var/spool/smtpd/queue/<bucket>/ (every queued message), deferred 0 (OpenSMTPD keeps deferred mail in the same queue), maildrop = files under /var/spool/smtpd/offline"
MTA_DELIVERY="maildir under /var/vmail/<user>/Maildir as user vmail, $KNOWN addresses user1..user$KNOWN@$DOMAIN in a virtual table; nouser1..nouser$UNKNOWN are rejected at RCPT (a virtual-table miss: 524 5.2.4 Mailing list expansion problem)"

spool() { echo "$(chroot_dir opensmtpd)/var/spool/smtpd/$1"; }
dirs_at() { find "$(spool "$1")" -mindepth "$2" -maxdepth "$2" -type d 2>/dev/null | wc -l; }
queue_counts() {
    echo "$(dirs_at incoming 1),$(dirs_at queue 2),0,$(find "$(spool offline)" -type f 2>/dev/null | wc -l)"
}
queue_busy() { echo $(($(dirs_at incoming 1) + $(dirs_at queue 2))); }

smtpd_conf() {
    local compression=$1
    cat <<EOF
# mtabench OpenSMTPD: local Maildir delivery for $DOMAIN, nothing relayed
table users file:/etc/smtpd/bench_users
$([ "$compression" = on ] && echo "queue compression")
listen on 127.0.0.1 port 25 hostname mx-opensmtpd.$DOMAIN
action "bench" maildir "/var/vmail/%{dest.user}/Maildir" user vmail virtual <users>
match from any for domain "$DOMAIN" action "bench"
EOF
}

setup() {
    create opensmtpd opensmtpd rsyslog
    local dir
    dir=$(chroot_dir opensmtpd)
    opensmtpd_vmail "$dir" mx-opensmtpd "$KNOWN" "$DOMAIN"
    rsyslog_maillog "$dir"
    write_users "$dir/root/users.txt" "$KNOWN" "$UNKNOWN" "$DOMAIN"
}

start_smtpd() {
    local compression=$1 dir
    dir=$(chroot_dir opensmtpd)
    smtpd_conf "$compression" >"$dir/etc/smtpd.conf"
    up opensmtpd
    run opensmtpd /usr/sbin/smtpd -n
    run opensmtpd /usr/sbin/rsyslogd
    sleep 1
    run opensmtpd /usr/sbin/smtpd
    sleep 3
}

record() {
    local slug=$1 compression=$2 settings=$3 notes=$4
    local run_dir=$OUT/opensmtpd-$slug dir
    dir=$(chroot_dir opensmtpd)
    start_smtpd "$compression"
    # shellcheck disable=SC2016 # a dpkg-query format
    MTA_VERSION=$(chroot "$dir" dpkg-query -W -f '${Version}' opensmtpd)
    bench_run "$run_dir" "$DUR" "$RATE" "$THREADS" "$dir/root/users.txt" "$settings" "$notes"
    down opensmtpd
    cp "$dir/etc/smtpd.conf" "$run_dir/smtpd.conf"
}

setup
rm -rf "$(chroot_dir opensmtpd)"/var/spool/smtpd/{queue,incoming}/* "$(chroot_dir opensmtpd)/var/log/maillog"
record queue-compression-off off 'queue_compression = "off"  # default' \
    "OpenSMTPD defaults (queue compression off). $THREADS postal threads, rate cap $RATE/min, body 0-4 KB, 1 message per connection; $UNKNOWN of $((KNOWN + UNKNOWN)) recipients unknown (524 5.2.4 at RCPT)."
record queue-compression-on on 'queue_compression = "on"  # default/base value: "off"' \
    "Changed setting: queue compression (messages compressed in the queue). Otherwise as opensmtpd-queue-compression-off."
