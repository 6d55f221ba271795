#!/bin/bash
# Record benchmark runs of notqmail (qmail 1.03 lineage) in a Debian 12 chroot with its own
# network namespace (scripts/record/chroot_qmail.sh). Needs root.
#
#   qmail.sh setup SRC_DIR          build notqmail from SRC_DIR in the chroot, users, control
#   qmail.sh record RUN_ID SETTING VALUE [NOTES]
#                                   one bounded postal run into samples/mtas/RUN_ID
#
# SETTING is a /var/qmail/control file (concurrencylocal, ...) or `tcpserver_c` (the
# connection limit `tcpserver -c`). qmail-send logs through `multilog t` (TAI64N stamps);
# qmail-smtpd runs under `tcpserver -v`, its log through `multilog t` too.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
PROJECT=$(cd "$HERE/../.." && pwd)
CH="$HERE/chroot_qmail.sh"
NAME=qmail
D=$("$CH" dir $NAME)
Q=/var/qmail
DOMAIN=bench.test
USERS=${USERS:-500}
UNKNOWN=${UNKNOWN:-5}          # nouser1..N: accepted at SMTP, bounced by qmail-local
DUR=${DUR:-180}                # load seconds
RATE=${RATE:-1200}             # postal -r: messages per minute, keeps each log small
THREADS=${THREADS:-4}
DRAIN_MAX=${DRAIN_MAX:-120}
CONN_LIMIT_DEFAULT=40          # tcpserver -c default

setup() {
    local src=$1
    "$CH" create $NAME build-essential groff-base ucspi-tcp daemontools procps
    rm -rf "$D/usr/src/notqmail"
    mkdir -p "$D/usr/src"
    cp -a "$src" "$D/usr/src/notqmail"
    "$CH" up $NAME
    "$CH" run $NAME bash -euc '
        # users and groups as INSTALL.ids.md says
        getent group nofiles >/dev/null || groupadd nofiles
        getent group qmail >/dev/null || groupadd qmail
        for u in alias:nofiles:/var/qmail/alias qmaild:nofiles:/var/qmail qmaill:nofiles:/var/qmail \
                 qmailp:nofiles:/var/qmail qmailq:qmail:/var/qmail qmailr:qmail:/var/qmail qmails:qmail:/var/qmail; do
            IFS=: read -r n g h <<<"$u"
            getent passwd "$n" >/dev/null || useradd -g "$g" -d "$h" -s /usr/sbin/nologin "$n"
        done
        cd /usr/src/notqmail && make setup check >/tmp/notqmail-build.log 2>&1
        '
    # control files: this host is mx.bench.test, local domain bench.test
    local c=$D$Q/control
    echo mx.$DOMAIN > "$c/me"
    printf '%s\n' "$DOMAIN" localhost > "$c/locals"
    printf '%s\n' "$DOMAIN" > "$c/rcpthosts"
    echo $DOMAIN > "$c/defaultdomain"
    echo $DOMAIN > "$c/plusdomain"
    # aliases: postmaster, mailer-daemon, root into the alias user's Maildir
    "$CH" run $NAME bash -euc '
        a=/var/qmail/alias
        for f in postmaster mailer-daemon root; do echo ./Maildir/ > $a/.qmail-$f; done
        [ -d $a/Maildir ] || { mkdir -p $a/Maildir/{cur,new,tmp}; chown -R alias:nofiles $a/Maildir; }
        chmod 644 $a/.qmail-*
        '
    # USERS local accounts (qmail-getpw reads /etc/passwd), each with ~/Maildir
    "$CH" run $NAME bash -euc '
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
    # tcpserver rules: 127.0.0.1 may relay (none needed), everyone else as default
    echo '127.:allow,RELAYCLIENT=""' > "$D/etc/tcp.smtp"
    echo ':allow' >> "$D/etc/tcp.smtp"
    "$CH" run $NAME tcprules /etc/tcp.smtp.cdb /etc/tcp.smtp.tmp < "$D/etc/tcp.smtp"
    mkdir -p "$D/var/log/qmail/send" "$D/var/log/qmail/smtpd"
    "$CH" run $NAME chown -R qmaill:nofiles /var/log/qmail
    "$CH" down $NAME
}

users_file() { # postal's list: USERS known, UNKNOWN unknown local recipients
    local f=$1
    { for i in $(seq 1 "$USERS"); do echo "user$i@$DOMAIN"; done
      for i in $(seq 1 "$UNKNOWN"); do echo "nouser$i@$DOMAIN"; done; } > "$f"
}

count() { find "$D$Q/queue/$1" -type f 2>/dev/null | wc -l; }

queue_sampler() { # same columns as Postfix's sampler; qmail's own queue dirs
    # incoming = todo/ (not yet preprocessed by qmail-send), active = info/ (messages in the
    # queue), deferred = 0 (qmail keeps a deferred message in info/ until its next try),
    # maildrop = pid/ (qmail-queue injections under way)
    echo "utc,incoming,active,deferred,maildrop"
    while :; do
        echo "$(date -u +%FT%TZ),$(count todo),$(count info),0,$(count pid)"
        sleep 5
    done
}

start_mta() { # $1 = tcpserver -c
    local conn=$1
    "$CH" up $NAME
    # qmail-start runs its logger as qmaill itself
    setsid "$CH" run $NAME bash -c '
        cd /var/qmail
        exec env - PATH=/var/qmail/bin:/usr/bin:/bin \
            qmail-start ./Maildir/ multilog t s16777215 n20 /var/log/qmail/send' \
        </dev/null >/dev/null 2>&1 &
    setsid "$CH" run $NAME bash -c '
        qd=$(id -u qmaild); ng=$(getent group nofiles | cut -d: -f3)
        exec env - PATH=/var/qmail/bin:/usr/bin:/bin \
            tcpserver -v -R -H -l mx.bench.test -x /etc/tcp.smtp.cdb -c "$1" -u "$qd" -g "$ng" \
                127.0.0.1 25 /var/qmail/bin/qmail-smtpd 2>&1 \
            | setuidgid qmaill multilog t s16777215 n20 /var/log/qmail/smtpd' _ "$conn" \
        </dev/null >/dev/null 2>&1 &
    for _ in $(seq 1 30); do
        "$CH" host $NAME bash -c 'exec 3<>/dev/tcp/127.0.0.1/25' 2>/dev/null && return 0
        sleep 1
    done
    echo "qmail-smtpd did not come up" >&2
    return 1
}

stop_mta() {
    # qmail-send finishes its log lines on TERM; then the rest of the namespace
    local pids p
    pids=$(ip netns pids "mta-$NAME" || true)
    for p in $pids; do
        [ "$(cat /proc/"$p"/comm 2>/dev/null)" = qmail-send ] && kill -TERM "$p"
    done
    sleep 3
    "$CH" down $NAME
}

record() {
    local run_id=$1 setting=$2 value=$3 notes=${4:-}
    local out=$PROJECT/samples/mtas/$run_id
    mkdir -p "$out"
    local work; work=$(mktemp -d /tmp/qmail-rec.XXXXXX)
    users_file "$work/users.txt"

    local conn=$CONN_LIMIT_DEFAULT orig=""
    if [ "$setting" = tcpserver_c ]; then
        conn=$value
    else
        orig=$(cat "$D$Q/control/$setting" 2>/dev/null || echo "(default)")
        echo "$value" > "$D$Q/control/$setting"
    fi
    # empty logs: this run's lines only (the cut below still keeps the monitor window)
    rm -f "$D"/var/log/qmail/{send,smtpd}/{current,@*,state,lock}
    start_mta "$conn"
    sleep 2

    local send_log=$D/var/log/qmail/send/current smtpd_log=$D/var/log/qmail/smtpd/current
    local off_send off_smtpd
    off_send=$(stat -c %s "$send_log" 2>/dev/null || echo 0)
    off_smtpd=$(stat -c %s "$smtpd_log" 2>/dev/null || echo 0)

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

    # drain: todo and info empty, or DRAIN_MAX seconds
    local t0; t0=$(date +%s)
    while [ $(( $(count todo) + $(count info) )) -gt 0 ] && [ $(( $(date +%s) - t0 )) -lt "$DRAIN_MAX" ]; do
        sleep 1
    done
    local drained left
    drained=$(date -u +%FT%TZ)
    left="todo=$(count todo) info=$(count info) local=$(count local) remote=$(count remote)"
    sleep 6
    kill $vm $io $qs 2>/dev/null || true
    wait $vm $io $qs 2>/dev/null || true
    local mon_end; mon_end=$(date -u +%FT%TZ)
    stop_mta

    # the logs from monitor start to monitor stop
    local end_send end_smtpd
    end_send=$(stat -c %s "$send_log"); end_smtpd=$(stat -c %s "$smtpd_log")
    tail -c +$((off_send + 1)) "$send_log" | head -c $((end_send - off_send)) | gzip -9n > "$out/qmail-send.log.gz"
    tail -c +$((off_smtpd + 1)) "$smtpd_log" | head -c $((end_smtpd - off_smtpd)) | gzip -9n > "$out/qmail-smtpd.log.gz"

    # side files: the control settings in force
    ( cd "$D$Q/control" && for f in *; do printf '%s: %s\n' "$f" "$(tr '\n' ' ' < "$f")"; done ) > "$out/control.txt"
    echo "tcpserver -v -R -H -l mx.bench.test -x /etc/tcp.smtp.cdb -c $conn -u qmaild -g nofiles 127.0.0.1 25 qmail-smtpd" >> "$out/control.txt"

    # restore
    if [ "$setting" != tcpserver_c ]; then
        if [ "$orig" = "(default)" ]; then rm -f "$D$Q/control/$setting"; else echo "$orig" > "$D$Q/control/$setting"; fi
    fi

    local changed
    if [ "$setting" = tcpserver_c ]; then
        changed="tcpserver_c = \"$value\"  # default/base value: \"$CONN_LIMIT_DEFAULT\""
    else
        changed="$setting = \"$value\"  # default/base value: \"$orig\""
    fi
    cat > "$out/run.toml" <<EOF
run_id = "$run_id"
hostname = "$(hostname)"
start_utc = "$start"          # load generator started
end_utc = "$end"              # load generator exited
duration_s = $(awk -v a="$s_ep" -v b="$e_ep" 'BEGIN{printf "%.1f", b-a}')
load_exit_code = $rc     # exit status of timeout(1): 137 = postal ignored SIGINT and was killed 30 s later
monitor_start_utc = "$mon_start"   # vmstat/iostat/queue sampler started
monitor_end_utc = "$mon_end"       # vmstat/iostat/queue sampler stopped
queue_drained_utc = "$drained"  # todo+info empty (or drain limit ${DRAIN_MAX}s hit)
queue_left_at_stop = "$left"
maillog_window = "qmail-send: bytes $off_send..$end_send of send/current; qmail-smtpd: bytes $off_smtpd..$end_smtpd of smtpd/current (monitor start to stop)"
maillog_timestamp_format = "TAI64N '@4000...' (multilog t), UTC"
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
name = "qmail"
version = "notqmail 1.09"
listen = "127.0.0.1:25 in network namespace mta-$NAME (tcpserver -c $conn)"
delivery = "qmail-local to ./Maildir/ (qmail-start default delivery) of $USERS local accounts user1..user$USERS@$DOMAIN; nouser1..nouser$UNKNOWN@$DOMAIN in the list are accepted and bounced"

[mta.changed_settings]
$changed

[notes]
text = """$notes Queue sampler columns: incoming = queue/todo, active = queue/info, deferred = 0 (qmail has no deferred queue), maildrop = queue/pid. Shared 2-vCPU VM: other unrelated load was running."""
EOF

    # oracle: raw lines and the awk/grep used by tests/test_mta_qmail.py
    local ora=$PROJECT/tests/fixtures/oracles/$run_id
    mkdir -p "$ora"
    zcat "$out/qmail-send.log.gz" | "$CH" _chroot "$D" tai64nlocal > "$ora/qmail-send.tai64nlocal.txt" || true
    gzip -9nf "$ora/qmail-send.tai64nlocal.txt"
    oracle_readme "$run_id" > "$ora/README.md"
    rm -rf "$work"
    echo "done $run_id rc=$rc start=$start end=$end drained=$drained left: $left"
}

oracle_readme() {
    cat <<EOF
# Oracle for samples/mtas/$1 (notqmail 1.09)

qmail has no summary tool of the kind of pflogsumm or eximstats in its install (qmailanalog
is a separate package), so tests/test_mta_qmail.py counts the raw lines itself with regular
expressions written in the test. The minute of each line comes from daemontools' own
\`tai64nlocal\`, run in the chroot (TZ UTC) right after the run (scripts/record/qmail.sh):

    zcat samples/mtas/$1/qmail-send.log.gz \\
        | chroot /work/chroots/qmail tai64nlocal | gzip -9n > qmail-send.tai64nlocal.txt.gz

Counted per minute and per run (qmail-send's lines):
- received: \`info msg N: bytes B from <s> qp P uid U\`, except a bounce qmail-send injected
  itself (its qp P was announced by a \`bounce msg M qp P\` line before)
- delivered / deferred / bounced: \`delivery D: success|deferral|failure: ...\`
- messages: \`new msg N\` lines (N is an inode number and is reused; \`end msg N\` ends one)
- the tie of \`delivery D:\` to its message: the last \`starting delivery D: msg N\` before it

The same by hand (UTC minute, then count):

    zcat qmail-send.tai64nlocal.txt.gz | awk '{m=substr(\$2,1,5)}
        /bounce msg [0-9]+ qp /{b[\$NF]=1}
        /info msg [0-9]+: bytes/{for(i=1;i<=NF;i++) if(\$i=="qp") q=\$(i+1); if(q in b) delete b[q]; else r[m]++}
        / delivery [0-9]+: success: /{d[m]++} / delivery [0-9]+: deferral: /{f[m]++} / delivery [0-9]+: failure: /{x[m]++}
        END{for(k in r) print k, "received", r[k]; for(k in d) print k, "delivered", d[k];
            for(k in f) print k, "deferred", f[k]; for(k in x) print k, "bounced", x[k]}' | sort
EOF
}

case ${1:-} in
    setup) shift; setup "$@" ;;
    record) shift; record "$@" ;;
    *) echo "usage: $0 setup SRC_DIR | record RUN_ID SETTING VALUE [NOTES]" >&2; exit 2 ;;
esac
