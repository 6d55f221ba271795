#!/bin/bash
# Record benchmark runs of Courier (Debian 12 courier-mta) in a Debian 12 chroot with its
# own network namespace (scripts/record/chroot_qmail.sh). Needs root.
#
#   courier.sh setup                 chroot, packages, local domain, users, syslog
#   courier.sh record RUN_ID FILE SETTING VALUE [NOTES]
#                                    one bounded postal run into samples/mtas/RUN_ID
#
# FILE is the /etc/courier file holding SETTING (esmtpd MAXDAEMONS, module.local MAXDELS,
# courierd ...). Courier logs through syslog only: rsyslogd in the chroot writes mail.* to
# /var/log/mail.log, cut to the run window as maillog.gz.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
PROJECT=$(cd "$HERE/../.." && pwd)
CH="$HERE/chroot_qmail.sh"
NAME=courier
D=$("$CH" dir $NAME)
DOMAIN=bench.test
USERS=${USERS:-500}
UNKNOWN=${UNKNOWN:-5}          # nouser1..N: Courier rejects them at RCPT
DUR=${DUR:-180}
RATE=${RATE:-2400}
THREADS=${THREADS:-4}
DRAIN_MAX=${DRAIN_MAX:-120}
SPOOL=/var/lib/courier

setup() {
    "$CH" create $NAME courier-mta courier-base rsyslog procps
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
    grep -q '^ADDRESS=' "$e/esmtpd" && sed -i 's/^ADDRESS=.*/ADDRESS=127.0.0.1/' "$e/esmtpd" \
        || echo 'ADDRESS=127.0.0.1' >> "$e/esmtpd"
    sed -i -e 's/^TCPDOPTS=.*/TCPDOPTS="-stderrlogger=\/usr\/sbin\/courierlogger -noidentlookup -nodnslookup"/' "$e/esmtpd"
    grep -q '^postmaster:' "$e/aliases/system" || echo 'postmaster: user1' >> "$e/aliases/system"
    cat > "$D/etc/rsyslog.conf" <<'EOF'
module(load="imuxsock")
$FileCreateMode 0644
mail.*	/var/log/mail.log
EOF
    "$CH" up $NAME
    "$CH" run $NAME bash -euc '
        makeacceptmailfor; makesmtpaccess; makealiases
        n=$1
        getent group bench >/dev/null || groupadd -g 5000 bench
        for i in $(seq 1 "$n"); do
            u=user$i
            getent passwd $u >/dev/null && continue
            echo "$u:x:$((5000 + i)):5000::/home/$u:/usr/sbin/nologin" >> /etc/passwd
            echo "$u:*:19000:0:99999:7:::" >> /etc/shadow
            mkdir -p /home/$u/Maildir/cur /home/$u/Maildir/new /home/$u/Maildir/tmp
            chown -R $((5000 + i)):5000 /home/$u
            chmod 755 /home/$u
        done' _ "$USERS"
    "$CH" down $NAME
}

users_file() {
    local f=$1
    { for i in $(seq 1 "$USERS"); do echo "user$i@$DOMAIN"; done
      for i in $(seq 1 "$UNKNOWN"); do echo "nouser$i@$DOMAIN"; done; } > "$f"
}

count() { find "$D$SPOOL/$1" -type f -name "${2:-*}" ! -name courierd.lock 2>/dev/null | wc -l; }

queue_sampler() { # same columns as Postfix's sampler; Courier's own spool
    # incoming = tmp/ (messages being received; not courierd's lock file there), active = msgs/ control files (C*: messages
    # in the queue), deferred = 0 (Courier keeps a deferred message in msgs/, scheduled in
    # msgq/), maildrop = 0 (no pickup directory)
    echo "utc,incoming,active,deferred,maildrop"
    while :; do
        echo "$(date -u +%FT%TZ),$(count tmp),$(count msgs 'C*'),0,0"
        sleep 5
    done
}

start_mta() {
    "$CH" up $NAME
    setsid "$CH" run $NAME bash -c '
        rm -f /run/rsyslogd.pid
        mkdir -p /run/courier /run/courier/authdaemon
        chown daemon:daemon /run/courier/authdaemon 2>/dev/null || true
        rsyslogd
        authdaemond start
        courier start
        esmtpd start
        exec sleep infinity' </dev/null >/dev/null 2>&1 &
    for _ in $(seq 1 30); do
        "$CH" host $NAME bash -c 'exec 3<>/dev/tcp/127.0.0.1/25' 2>/dev/null && return 0
        sleep 1
    done
    echo "courieresmtpd did not come up" >&2
    return 1
}

stop_mta() {
    "$CH" run $NAME bash -c 'esmtpd stop; courier stop; authdaemond stop' >/dev/null 2>&1 || true
    sleep 2
    "$CH" down $NAME
}

record() {
    local run_id=$1 file=$2 setting=$3 value=$4 notes=${5:-}
    local out=$PROJECT/samples/mtas/$run_id
    mkdir -p "$out"
    local work; work=$(mktemp -d /tmp/courier-rec.XXXXXX)
    users_file "$work/users.txt"
    local cf=$D/etc/courier/$file
    cp "$cf" "$work/orig-$file"
    local orig; orig=$(sed -n "s/^$setting=//p" "$cf" | tail -1)
    if grep -q "^$setting=" "$cf"; then
        sed -i "s/^$setting=.*/$setting=$value/" "$cf"
    else
        echo "$setting=$value" >> "$cf"
    fi

    local log=$D/var/log/mail.log
    rm -f "$log"
    start_mta
    sleep 2
    local off; off=$(stat -c %s "$log" 2>/dev/null || echo 0)

    vmstat -t 5 > "$out/vmstat.txt" 2>&1 & local vm=$!
    iostat -x 5 > "$out/iostat.txt" 2>&1 & local io=$!
    queue_sampler > "$out/queue.txt" & local qs=$!
    local mon_start; mon_start=$(date -u +%FT%TZ)
    sleep 5

    local start end s_ep e_ep rc
    start=$(date -u +%FT%TZ); s_ep=$(date +%s.%N)
    local cmd=(postal -p 25 -t "$THREADS" -m 4 -r "$RATE" 127.0.0.1 "$work/users.txt")
    set +e
    # postal writes its postal.log (one line per message) into its working directory
    ( cd "$work" && "$CH" host $NAME timeout -s INT -k 30 "$DUR" stdbuf -oL "${cmd[@]}" ) > "$out/postal.csv" 2>&1
    rc=$?
    set -e
    end=$(date -u +%FT%TZ); e_ep=$(date +%s.%N)

    local t0; t0=$(date +%s)
    while [ $(( $(count tmp) + $(count msgs 'C*') )) -gt 0 ] && [ $(( $(date +%s) - t0 )) -lt "$DRAIN_MAX" ]; do
        sleep 1
    done
    local drained left
    drained=$(date -u +%FT%TZ)
    left="tmp=$(count tmp) msgs=$(count msgs 'C*')"
    sleep 6
    kill $vm $io $qs 2>/dev/null || true
    wait $vm $io $qs 2>/dev/null || true
    local mon_end; mon_end=$(date -u +%FT%TZ)
    local endoff; endoff=$(stat -c %s "$log")
    stop_mta
    tail -c +$((off + 1)) "$log" | head -c $((endoff - off)) | gzip -9n > "$out/maillog.gz"

    # side files: the settings in force
    for f in esmtpd courierd module.local; do
        grep -v '^#' "$D/etc/courier/$f" | grep -v '^$' | sed "s|^|$f: |"
    done > "$out/courier-settings.txt"
    cp "$work/orig-$file" "$cf"

    cat > "$out/run.toml" <<EOF
run_id = "$run_id"
hostname = "$(hostname)"
start_utc = "$start"          # load generator started
end_utc = "$end"              # load generator exited
duration_s = $(awk -v a="$s_ep" -v b="$e_ep" 'BEGIN{printf "%.1f", b-a}')
load_exit_code = $rc     # exit status of timeout(1): 124 = time limit reached, 137 = killed 30 s after SIGINT
monitor_start_utc = "$mon_start"   # vmstat/iostat/queue sampler started
monitor_end_utc = "$mon_end"       # vmstat/iostat/queue sampler stopped
queue_drained_utc = "$drained"  # tmp+msgs empty (or drain limit ${DRAIN_MAX}s hit)
queue_left_at_stop = "$left"
maillog_window = "bytes $off..$endoff of /var/log/mail.log in the chroot (monitor start to stop)"
maillog_timestamp_format = "RFC 3339 with microseconds and offset (rsyslogd 8 default file format, mail.*)"
kernel = "$(uname -r)"
cpus = $(nproc)

[tool]
name = "postal"
version = "$(dpkg-query -W -f '${Version}' postal)"
command = 'timeout -s INT -k 30 $DUR ${cmd[*]}'
output_file = "postal.csv"
vmstat_command = "vmstat -t 5"
iostat_command = "iostat -x 5"

[mta]
name = "courier"
version = "$(dpkg-query --admindir="$D/var/lib/dpkg" -W -f '${Version}' courier-mta)"
listen = "127.0.0.1:25 in network namespace mta-$NAME"
delivery = "courierlocal to ./Maildir (DEFAULTDELIVERY) of $USERS local accounts user1..user$USERS@$DOMAIN; nouser1..nouser$UNKNOWN@$DOMAIN in the list are rejected at RCPT"

[mta.changed_settings]
$setting = "$value"  # in /etc/courier/$file; default/base value: "$orig"

[notes]
text = """$notes Queue sampler columns: incoming = /var/lib/courier/tmp files, active = msgs/ control files (C*), deferred = 0, maildrop = 0 (Courier has neither queue). Shared 2-vCPU VM: other unrelated load was running."""
EOF
    local ora=$PROJECT/tests/fixtures/oracles/$run_id
    mkdir -p "$ora"
    oracle "$out/maillog.gz" > "$ora/grep-counts.txt"
    oracle_readme "$run_id" > "$ora/README.md"
    rm -rf "$work"
    echo "done $run_id rc=$rc start=$start end=$end drained=$drained left: $left"
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
