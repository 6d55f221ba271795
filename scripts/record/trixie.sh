#!/bin/bash
# Record Debian 13 (trixie) runs: OpenSMTPD 7.x delivering to Maildir, then Dovecot 2.4 serving
# POP3 and IMAP while OpenSMTPD fills its mailboxes over LMTP.
#   trixie.sh OUT_DIR [DURATION_S] [RATE_PER_MIN] [opensmtpd|dovecot ...]
# OUT_DIR gets opensmtpd-7-maildir/ and dovecot-24-default/. One trixie chroot (chroot.sh with
# MTABENCH_SUITE=trixie, under $MTABENCH_CHROOTS) holds opensmtpd, rsyslog and Dovecot; rsyslogd
# inside writes Dovecot's lines to /var/log/dovecot.log and the rest of mail.* to /var/log/maillog.
# Needs root; installs the packages inside the chroot, never on the host.
set -euo pipefail
OUT=${1:?usage: trixie.sh OUT_DIR [DURATION_S] [RATE_PER_MIN] [opensmtpd|dovecot ...]}
DUR=${2:-90}
RATE=${3:-900}
shift $(($# < 3 ? $# : 3))
WHICH=("${@:-opensmtpd dovecot}")
THREADS=${THREADS:-4}
export MTABENCH_SUITE=trixie
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench_run.sh
source "$HERE/bench_run.sh"

MTA_NAME=trixie
DOMAIN=bench.test
KNOWN=200
UNKNOWN=6
MAILBOXES=100
PASSWORD=bench-secret
LOG_TIMESTAMP_FORMAT="RFC 3339 with microseconds and offset (rsyslog 8.2504 RSYSLOG_FileFormat, Debian 13), UTC"
DIR=$(chroot_dir "$MTA_NAME")

spool() { echo "$DIR/var/spool/smtpd/$1"; }
dirs_at() { find "$(spool "$1")" -mindepth "$2" -maxdepth "$2" -type d 2>/dev/null | wc -l; }
queue_counts() {
    echo "$(dirs_at incoming 1),$(dirs_at queue 2),0,$(find "$(spool offline)" -type f 2>/dev/null | wc -l)"
}
queue_busy() { echo $(($(dirs_at incoming 1) + $(dirs_at queue 2))); }
QUEUE_COLUMNS="incoming = message folders under /var/spool/smtpd/incoming (being received), active = message folders under /var/spool/smtpd/queue/<bucket>/ (every queued message), deferred 0 (OpenSMTPD keeps deferred mail in the same queue), maildrop = files under /var/spool/smtpd/offline"

setup() {
    create "$MTA_NAME" opensmtpd rsyslog dovecot-core dovecot-pop3d dovecot-imapd dovecot-lmtpd
    opensmtpd_vmail "$DIR" mx-trixie "$KNOWN" "$DOMAIN"
    cat >"$DIR/etc/rsyslog.conf" <<'EOF'
module(load="imuxsock" SysSock.RateLimit.Interval="0")
if $programname == 'dovecot' then {
    action(type="omfile" file="/var/log/dovecot.log")
    stop
}
mail.*	-/var/log/maillog
EOF
    rm -f "$DIR"/etc/rsyslog.d/*.conf
    write_users "$DIR/root/users.txt" "$KNOWN" "$UNKNOWN" "$DOMAIN"
    head -n "$MAILBOXES" "$DIR/root/users.txt" >"$DIR/root/mailboxes.txt"
    echo "$PASSWORD" >"$DIR/root/mail-password"
    local uid gid
    uid=$(chroot "$DIR" id -u vmail)
    gid=$(chroot "$DIR" id -g vmail)
    for i in $(seq 1 "$KNOWN"); do
        echo "user$i@$DOMAIN:{PLAIN}$PASSWORD:$uid:$gid::/var/vmail/$DOMAIN/user$i::"
    done >"$DIR/etc/dovecot/users"
    chmod 640 "$DIR/etc/dovecot/users"
    chroot "$DIR" chgrp dovecot /etc/dovecot/users
}

# Debian 13's dovecot.conf with its auth, mail and TLS parts replaced: passwd-file users, Maildir
# under /var/vmail, no TLS (plain logins allowed on loopback). Logging is left at its defaults.
dovecot_conf() {
    cat <<EOF
# mtabench Dovecot 2.4: POP3, IMAP and LMTP for $DOMAIN on 127.0.0.1, default logging
dovecot_config_version = 2.4.0
dovecot_storage_version = 2.4.0
!include_try /usr/share/dovecot/protocols.d/*.protocol
listen = 127.0.0.1
ssl = no
auth_allow_cleartext = yes
auth_mechanisms = plain login
passdb passwd-file {
  passwd_file_path = /etc/dovecot/users
}
userdb passwd-file {
  passwd_file_path = /etc/dovecot/users
}
mail_driver = maildir
mail_path = ~/Maildir
namespace inbox {
  inbox = yes
}
first_valid_uid = 100
EOF
}

smtpd_conf() {
    local action=$1
    cat <<EOF
# mtabench OpenSMTPD: local delivery for $DOMAIN, nothing relayed
table users file:/etc/smtpd/bench_users
listen on 127.0.0.1 port 25 hostname mx-trixie.$DOMAIN
EOF
    if [ "$action" = maildir ]; then
        echo "action \"bench\" maildir \"/var/vmail/%{dest.user}/Maildir\" user vmail virtual <users>"
    else
        # the virtual table refuses unknown users at RCPT; rcpt-to: LMTP is given the address
        echo "action \"bench\" lmtp \"/run/dovecot/lmtp\" rcpt-to virtual <users>"
    fi
    echo "match from any for domain \"$DOMAIN\" action \"bench\""
}

start() {
    local action=$1
    smtpd_conf "$action" >"$DIR/etc/smtpd.conf"
    up "$MTA_NAME"
    run "$MTA_NAME" /usr/sbin/smtpd -n
    run "$MTA_NAME" /usr/sbin/rsyslogd
    sleep 1
    if [ "$action" = lmtp ]; then
        dovecot_conf >"$DIR/etc/dovecot/dovecot.conf"
        run "$MTA_NAME" /usr/sbin/dovecot
        sleep 2
    fi
    run "$MTA_NAME" /usr/sbin/smtpd
    sleep 3
    wait_smtp "$MTA_NAME"
}

record_opensmtpd() {
    local run_dir=$OUT/opensmtpd-7-maildir
    MTA_LABEL=opensmtpd
    LOG_FILES=(/var/log/maillog:maillog)
    MTA_DELIVERY="maildir under /var/vmail/<user>/Maildir as user vmail, $KNOWN addresses user1..user$KNOWN@$DOMAIN in a virtual table; nouser1..nouser$UNKNOWN are a virtual-table miss, refused at RCPT"
    start maildir
    # shellcheck disable=SC2016 # a dpkg-query format
    MTA_VERSION=$(chroot "$DIR" dpkg-query -W -f '${Version}' opensmtpd)
    bench_run "$run_dir" "$DUR" "$RATE" "$THREADS" "$DIR/root/users.txt" 'queue_compression = "off"  # default' \
        "OpenSMTPD $MTA_VERSION (Debian 13) with its defaults, Maildir delivery. $THREADS postal threads, rate cap $RATE/min, body 0-4 KB, 1 message per connection; $UNKNOWN of $((KNOWN + UNKNOWN)) recipients unknown (refused at RCPT)."
    down "$MTA_NAME"
    cp "$DIR/etc/smtpd.conf" "$run_dir/smtpd.conf"
}

record_dovecot() {
    local run_dir=$OUT/dovecot-24-default
    MTA_LABEL=dovecot
    LOG_FILES=(/var/log/dovecot.log:dovecot.log /var/log/maillog:maillog)
    MTA_LISTEN="127.0.0.1:110, 127.0.0.1:143 (Dovecot), 127.0.0.1:25 (OpenSMTPD) in a network namespace of its own (chroot $DIR)"
    MTA_DELIVERY="OpenSMTPD hands $KNOWN addresses user1..user$KNOWN@$DOMAIN to Dovecot's LMTP (Maildir under /var/vmail/$DOMAIN/<user>); nouser1..nouser$UNKNOWN are a virtual-table miss, refused at RCPT"
    start lmtp
    # shellcheck disable=SC2016 # a dpkg-query format
    MTA_VERSION="$(run "$MTA_NAME" dovecot --version) (dovecot-core $(chroot "$DIR" dpkg-query -W -f '${Version}' dovecot-core))"
    # the mailbox client drains the first $MAILBOXES mailboxes while postal refills them
    (timeout -k 5 $((DUR + 10)) nsenter -t "$(holder_pid "$MTA_NAME")" -n -- python3 "$HERE/mailbox_client.py" \
        "$DIR/root/mailboxes.txt" "$DIR/root/mail-password" "$DUR" 120 >"$OUT/mailbox_client.csv.part" 2>/dev/null || true) &
    local mc=$!
    bench_load "$run_dir" "$DUR" "$RATE" "$THREADS" "$DIR/root/users.txt"
    wait "$mc" || true
    mv "$OUT/mailbox_client.csv.part" "$run_dir/mailbox_client.csv"
    sleep 1
    bench_record "" \
        "Dovecot $MTA_VERSION (Debian 13) POP3 and IMAP with its default log format, through rsyslog; scripts/record/mailbox_client.py (half POP3, half IMAP rounds, every tenth login with a wrong password, at most 120 rounds a minute over $MAILBOXES mailboxes, output mailbox_client.csv) drains the mailboxes while postal ($THREADS threads, rate cap $RATE/min) refills them through OpenSMTPD and Dovecot's LMTP."
    run "$MTA_NAME" doveadm stop || true
    sleep 1
    down "$MTA_NAME"
    cp "$DIR/etc/smtpd.conf" "$run_dir/smtpd.conf"
    cp "$DIR/etc/dovecot/dovecot.conf" "$run_dir/dovecot.conf"
}

setup
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
for w in "${WHICH[@]}"; do
    rm -rf "$DIR"/var/spool/smtpd/{queue,incoming}/* "$DIR/var/log/maillog" "$DIR/var/log/dovecot.log"
    "record_$w"
done
