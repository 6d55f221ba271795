#!/bin/bash
# Record benchmark runs of notqmail (qmail 1.03 lineage) in a Debian 12 chroot with its own
# mount, PID and network namespace (chroot.sh; the run itself: bench_run.sh). Needs root.
#
#   qmail.sh setup SRC_DIR          build notqmail from SRC_DIR in the chroot, users, control
#   qmail.sh record RUN_ID SETTING VALUE [NOTES]
#                                   one bounded postal run into OUT_DIR/RUN_ID
#
# SETTING is a /var/qmail/control file (concurrencylocal, ...) or `tcpserver_c` (the
# connection limit `tcpserver -c`). qmail-send logs through `multilog t` (TAI64N stamps);
# qmail-smtpd runs under `tcpserver -v`, its log through `multilog t` too.
# Environment: OUT_DIR (default samples/mtas), ORACLE_DIR (default tests/fixtures/oracles),
# USERS, UNKNOWN, DUR, RATE, THREADS, DRAIN_MAX_S.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROJECT=$(cd "$HERE/../.." && pwd)
# shellcheck source=bench_run.sh
source "$HERE/bench_run.sh"

OUT_DIR=${OUT_DIR:-$PROJECT/samples/mtas}
ORACLE_DIR=${ORACLE_DIR:-$PROJECT/tests/fixtures/oracles}
MTA_NAME=qmail
D=$(chroot_dir qmail)
Q=/var/qmail
DOMAIN=bench.test
USERS=${USERS:-500}
UNKNOWN=${UNKNOWN:-5}          # nouser1..N: accepted at SMTP, bounced by qmail-local
DUR=${DUR:-180}                # load seconds
RATE=${RATE:-1200}             # postal -r: messages per minute, keeps each log small
THREADS=${THREADS:-4}
CONN_LIMIT_DEFAULT=40          # tcpserver -c default

MTA_LABEL=qmail
MTA_VERSION="notqmail 1.09"
MTA_DELIVERY="qmail-local to ./Maildir/ (qmail-start default delivery) of $USERS local accounts user1..user$USERS@$DOMAIN; nouser1..nouser$UNKNOWN@$DOMAIN in the list are accepted and bounced"
LOG_FILES=(/var/log/qmail/send/current:qmail-send.log /var/log/qmail/smtpd/current:qmail-smtpd.log)
LOG_KEYS=maillog
LOG_TIMESTAMP_FORMAT="TAI64N '@4000...' (multilog t), UTC"
# incoming = todo/ (not yet preprocessed by qmail-send), active = info/ (messages in the
# queue), deferred = 0 (qmail keeps a deferred message in info/ until its next try),
# maildrop = pid/ (qmail-queue injections under way)
QUEUE_COLUMNS="incoming = queue/todo, active = queue/info, deferred = 0 (qmail has no deferred queue), maildrop = queue/pid"

count() { find "$D$Q/queue/$1" -type f 2>/dev/null | wc -l; }
queue_counts() { echo "$(count todo),$(count info),0,$(count pid)"; }
queue_busy() { echo $(($(count todo) + $(count info))); }
queue_left() { echo "todo=$(count todo) info=$(count info) local=$(count local) remote=$(count remote)"; }

setup() {
    local src=$1
    create qmail build-essential groff-base ucspi-tcp daemontools procps
    rm -rf "$D/usr/src/notqmail"
    mkdir -p "$D/usr/src"
    cp -a "$src" "$D/usr/src/notqmail"
    up qmail
    # shellcheck disable=SC2016 # expanded by the inner bash
    run qmail bash -euc '
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
    # shellcheck disable=SC2016 # expanded by the inner bash
    run qmail bash -euc '
        a=/var/qmail/alias
        for f in postmaster mailer-daemon root; do echo ./Maildir/ > $a/.qmail-$f; done
        [ -d $a/Maildir ] || { mkdir -p $a/Maildir/{cur,new,tmp}; chown -R alias:nofiles $a/Maildir; }
        chmod 644 $a/.qmail-*
        '
    # USERS local accounts (qmail-getpw reads /etc/passwd), each with ~/Maildir
    add_maildir_users qmail "$USERS"
    # tcpserver rules: 127.0.0.1 may relay (none needed), everyone else as default
    echo '127.:allow,RELAYCLIENT=""' > "$D/etc/tcp.smtp"
    echo ':allow' >> "$D/etc/tcp.smtp"
    run qmail tcprules /etc/tcp.smtp.cdb /etc/tcp.smtp.tmp < "$D/etc/tcp.smtp"
    mkdir -p "$D/var/log/qmail/send" "$D/var/log/qmail/smtpd"
    run qmail chown -R qmaill:nofiles /var/log/qmail
    down qmail
}

start_mta() { # $1 = tcpserver -c
    local conn=$1
    up qmail
    # neither qmail-start nor tcpserver detaches: each runs in the background, in a session
    # of its own. qmail-start runs its logger as qmaill itself
    setsid "$HERE/chroot.sh" run qmail bash -c '
        cd /var/qmail
        exec env - PATH=/var/qmail/bin:/usr/bin:/bin \
            qmail-start ./Maildir/ multilog t s16777215 n20 /var/log/qmail/send' \
        </dev/null >/dev/null 2>&1 &
    # shellcheck disable=SC2016 # expanded by the inner bash
    setsid "$HERE/chroot.sh" run qmail bash -c '
        qd=$(id -u qmaild); ng=$(getent group nofiles | cut -d: -f3)
        exec env - PATH=/var/qmail/bin:/usr/bin:/bin \
            tcpserver -v -R -H -l mx.bench.test -x /etc/tcp.smtp.cdb -c "$1" -u "$qd" -g "$ng" \
                127.0.0.1 25 /var/qmail/bin/qmail-smtpd 2>&1 \
            | setuidgid qmaill multilog t s16777215 n20 /var/log/qmail/smtpd' _ "$conn" \
        </dev/null >/dev/null 2>&1 &
    wait_smtp qmail
}

stop_mta() {
    # qmail-send finishes its log lines on TERM; then the rest of the namespace
    local p
    for p in $(pids qmail); do
        [ "$(cat /proc/"$p"/comm 2>/dev/null)" = qmail-send ] && kill -TERM "$p"
    done
    sleep 3
    down qmail
}

record() {
    local run_id=$1 setting=$2 value=$3 notes=${4:-}
    local out=$OUT_DIR/$run_id
    write_users "$D/root/users.txt" "$USERS" "$UNKNOWN" "$DOMAIN"

    local conn=$CONN_LIMIT_DEFAULT orig=""
    if [ "$setting" = tcpserver_c ]; then
        conn=$value
    else
        orig=$(cat "$D$Q/control/$setting" 2>/dev/null || echo "(default)")
        echo "$value" > "$D$Q/control/$setting"
    fi
    MTA_LISTEN="127.0.0.1:25 in a network namespace of its own (chroot $D; tcpserver -c $conn)"
    # empty logs: this run's lines only (the cut still keeps the monitor window)
    rm -f "$D"/var/log/qmail/{send,smtpd}/{current,@*,state,lock}
    start_mta "$conn"
    sleep 2

    bench_load "$out" "$DUR" "$RATE" "$THREADS" "$D/root/users.txt"
    # the logs are cut after the stop: they end with qmail-send's own last lines
    stop_mta
    local changed
    if [ "$setting" = tcpserver_c ]; then
        changed="tcpserver_c = \"$value\"  # default/base value: \"$CONN_LIMIT_DEFAULT\""
    else
        changed="$setting = \"$value\"  # default/base value: \"$orig\""
    fi
    bench_record "$changed" "$notes"

    # side files: the control settings in force
    ( cd "$D$Q/control" && for f in *; do printf '%s: %s\n' "$f" "$(tr '\n' ' ' < "$f")"; done ) > "$out/control.txt"
    echo "tcpserver -v -R -H -l mx.bench.test -x /etc/tcp.smtp.cdb -c $conn -u qmaild -g nofiles 127.0.0.1 25 qmail-smtpd" >> "$out/control.txt"

    # restore
    if [ "$setting" != tcpserver_c ]; then
        if [ "$orig" = "(default)" ]; then rm -f "$D$Q/control/$setting"; else echo "$orig" > "$D$Q/control/$setting"; fi
    fi

    # oracle: raw lines and the awk/grep used by tests/test_mta_qmail.py
    local ora=$ORACLE_DIR/$run_id
    mkdir -p "$ora"
    zcat "$out/qmail-send.log.gz" | chroot "$D" env TZ=UTC tai64nlocal > "$ora/qmail-send.tai64nlocal.txt" || true
    gzip -9nf "$ora/qmail-send.tai64nlocal.txt"
    oracle_readme "$run_id" > "$ora/README.md"
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

# sourced (scripts/record/qmail_splogger.sh), it only defines the functions above
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    case ${1:-} in
        setup) shift; setup "$@" ;;
        record) shift; record "$@" ;;
        *) echo "usage: $0 setup SRC_DIR | record RUN_ID SETTING VALUE [NOTES]" >&2; exit 2 ;;
    esac
fi
