#!/bin/bash
# Record benchmark runs of Courier (Debian 12 courier-mta) in a Debian 12 chroot with its own
# mount, PID and network namespace (chroot.sh; the run itself: bench_run.sh). Needs root.
#
#   courier.sh setup                 chroot, packages, local domain, users, syslog
#   courier.sh record RUN_ID FILE SETTING VALUE [NOTES]
#                                    one bounded postal run into OUT_DIR/RUN_ID
#
# FILE is the /etc/courier file holding SETTING (esmtpd MAXDAEMONS, module.local MAXDELS,
# courierd ...). Courier logs through syslog only: rsyslogd in the chroot writes mail.* to
# /var/log/mail.log, cut to the run window as maillog.gz.
# Environment: OUT_DIR (default samples/mtas), ORACLE_DIR (default tests/fixtures/oracles),
# USERS, UNKNOWN, DUR, RATE, THREADS, DRAIN_MAX_S.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROJECT=$(cd "$HERE/../.." && pwd)
# shellcheck source=bench_run.sh
source "$HERE/bench_run.sh"

OUT_DIR=${OUT_DIR:-$PROJECT/samples/mtas}
ORACLE_DIR=${ORACLE_DIR:-$PROJECT/tests/fixtures/oracles}
MTA_NAME=courier
D=$(chroot_dir courier)
DOMAIN=bench.test
USERS=${USERS:-500}
UNKNOWN=${UNKNOWN:-5}          # nouser1..N: Courier rejects them at RCPT
DUR=${DUR:-180}
RATE=${RATE:-2400}
THREADS=${THREADS:-4}
SPOOL=/var/lib/courier

MTA_LABEL=courier
MTA_DELIVERY="courierlocal to ./Maildir (DEFAULTDELIVERY) of $USERS local accounts user1..user$USERS@$DOMAIN; nouser1..nouser$UNKNOWN@$DOMAIN in the list are rejected at RCPT"
LOG_FILES=(/var/log/mail.log:maillog)
LOG_KEYS=maillog
LOG_TIMESTAMP_FORMAT="RFC 3339 with microseconds and offset (rsyslogd 8 default file format, mail.*)"
# incoming = tmp/ (messages being received; not courierd's lock file there), active = msgs/
# control files (C*: messages in the queue), deferred = 0 (Courier keeps a deferred message in
# msgs/, scheduled in msgq/), maildrop = 0 (no pickup directory)
QUEUE_COLUMNS="incoming = /var/lib/courier/tmp files (courierd.lock left out), active = msgs/ control files (C*), deferred = 0, maildrop = 0 (Courier has neither queue)"

count() { find "$D$SPOOL/$1" -type f -name "${2:-*}" ! -name courierd.lock 2>/dev/null | wc -l; }
queue_counts() { echo "$(count tmp),$(count msgs 'C*'),0,0"; }
queue_busy() { echo $(($(count tmp) + $(count msgs 'C*'))); }
queue_left() { echo "tmp=$(count tmp) msgs=$(count msgs 'C*')"; }

setup() {
    create courier courier-mta courier-base rsyslog procps
    local e=$D/etc/courier
    echo mx.$DOMAIN > "$e/me"
    printf '%s\n' localhost "$DOMAIN" > "$e/locals"
    echo $DOMAIN > "$e/defaultdomain"
    printf '%s\n' localhost "$DOMAIN" > "$e/esmtpacceptmailfor.dir/bench"
    # the test domain does not resolve: no DNS check of senders; listen on loopback only
    # no /etc/services in a minbase chroot: the port as a number. All of postal's sessions
    # come from 127.0.0.1: at Debian's MAXPERIP=5 / MAXPERC=5 courieresmtpd refuses the 6th
    # ("Maximum connection limit reached"), which a session still tarpitted after a 550
    # reaches, and postal then segfaults; the per-address limits go up to MAXDAEMONS' 40
    sed -i -e 's/^BOFHCHECKDNS=.*/BOFHCHECKDNS=0/' -e 's/^PORT=.*/PORT=25/' \
        -e 's/^MAXPERIP=.*/MAXPERIP=40/' -e 's/^MAXPERC=.*/MAXPERC=40/' "$e/esmtpd"
    if grep -q '^ADDRESS=' "$e/esmtpd"; then
        sed -i 's/^ADDRESS=.*/ADDRESS=127.0.0.1/' "$e/esmtpd"
    else
        echo 'ADDRESS=127.0.0.1' >> "$e/esmtpd"
    fi
    sed -i -e 's/^TCPDOPTS=.*/TCPDOPTS="-stderrlogger=\/usr\/sbin\/courierlogger -noidentlookup -nodnslookup"/' "$e/esmtpd"
    grep -q '^postmaster:' "$e/aliases/system" || echo 'postmaster: user1' >> "$e/aliases/system"
    cat > "$D/etc/rsyslog.conf" <<'EOF'
module(load="imuxsock")
$FileCreateMode 0644
mail.*	/var/log/mail.log
EOF
    up courier
    run courier bash -euc 'makeacceptmailfor; makesmtpaccess; makealiases'
    add_maildir_users courier "$USERS"
    down courier
}

start_mta() {
    up courier
    # rsyslogd and Courier's daemons detach: the command returns once they are started
    run courier bash -c '
        rm -f /run/rsyslogd.pid
        mkdir -p /run/courier /run/courier/authdaemon
        chown daemon:daemon /run/courier/authdaemon 2>/dev/null || true
        rsyslogd
        authdaemond start
        courier start
        esmtpd start' </dev/null >/dev/null 2>&1
    wait_smtp courier
}

stop_mta() {
    run courier bash -c 'esmtpd stop; courier stop; authdaemond stop' >/dev/null 2>&1 || true
    sleep 2
    down courier
}

record() {
    local run_id=$1 file=$2 setting=$3 value=$4 notes=${5:-}
    local out=$OUT_DIR/$run_id
    write_users "$D/root/users.txt" "$USERS" "$UNKNOWN" "$DOMAIN"
    local cf=$D/etc/courier/$file orig_cf
    orig_cf=$(mktemp)
    cp "$cf" "$orig_cf"
    local orig; orig=$(sed -n "s/^$setting=//p" "$cf" | tail -1)
    if grep -q "^$setting=" "$cf"; then
        sed -i "s/^$setting=.*/$setting=$value/" "$cf"
    else
        echo "$setting=$value" >> "$cf"
    fi
    MTA_VERSION=$(dpkg-query --admindir="$D/var/lib/dpkg" -W -f '${Version}' courier-mta)

    rm -f "$D/var/log/mail.log"
    start_mta
    sleep 2
    bench_run "$out" "$DUR" "$RATE" "$THREADS" "$D/root/users.txt" \
        "$setting = \"$value\"  # in /etc/courier/$file; default/base value: \"$orig\"" "$notes"
    stop_mta

    # side files: the settings in force
    for f in esmtpd courierd module.local; do
        grep -v '^#' "$D/etc/courier/$f" | grep -v '^$' | sed "s|^|$f: |"
    done > "$out/courier-settings.txt"
    cp "$orig_cf" "$cf"
    rm -f "$orig_cf"

    local ora=$ORACLE_DIR/$run_id
    mkdir -p "$ora"
    oracle "$out/maillog.gz" > "$ora/grep-counts.txt"
    oracle_readme "$run_id" > "$ora/README.md"
}

# the counts tests/test_mta_courier.py checks per minute, per run by grep over the raw lines
ORACLE_GREPS=(
    "received|courierd: newmsg,id="
    "delivered|courier[a-z]+: id=[^,]+,from=<[^>]*>,addr=<[^>]*>(,size=[0-9]+)?(,success: |,status: success$)"
    "deferred|courier[a-z]+: id=[^,]+,from=<[^>]*>,addr=<[^>]*>(,size=[0-9]+)?,status: deferred$"
    "bounced|courier[a-z]+: id=[^,]+,from=<[^>]*>,addr=<[^>]*>(,size=[0-9]+)?,status: failure$"
    "rejected|courieresmtpd: error,relay=[^,]+,port=[0-9]+,(from|to)=<[^>]*>.*: [45][0-9][0-9] "
    "completed|courierd: completed,id="
)

oracle() {
    local g
    for g in "${ORACLE_GREPS[@]}"; do
        printf '%s %s\n' "${g%%|*}" "$(zcat "$1" | grep -cE "${g#*|}" || true)"
    done
}

oracle_readme() {
    echo "# Oracle for samples/mtas/$1 (Courier, Debian 12 courier-mta)"
    echo
    echo "Courier has no log summary tool of its own, so tests/test_mta_courier.py counts the raw"
    echo "syslog lines with regular expressions written in the test. grep-counts.txt holds the"
    echo "per-run counts taken right after the run (scripts/record/courier.sh) by:"
    echo
    local g
    for g in "${ORACLE_GREPS[@]}"; do
        echo "    zcat samples/mtas/$1/maillog.gz | grep -cE '${g#*|}'   # ${g%%|*}"
    done
    echo
    echo "Per minute: the same greps, counted by the stamp's minute (\`cut -c1-16 | sort | uniq -c\`)."
}

case ${1:-} in
    setup) shift; setup ;;
    record) shift; record "$@" ;;
    *) echo "usage: $0 setup | record RUN_ID FILE SETTING VALUE [NOTES]" >&2; exit 2 ;;
esac
