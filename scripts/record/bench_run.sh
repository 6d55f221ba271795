#!/bin/bash
# One bounded benchmark run against an MTA in a chroot (chroot.sh): samplers, load, log cut, run.toml.
# Sourced by the per-MTA scripts, which set:
#   MTA_NAME          chroot name (chroot.sh)
#   queue_counts      function printing "incoming,active,deferred,maildrop" of the MTA's own queue
#   queue_busy        function printing the number of messages still to deliver (drain test)
#   queue_left        optional function: run.toml's queue_left_at_stop (default: the four columns)
#   LOG_FILES         array of "path-inside-chroot:name-in-run-folder" (cut to the run window, gzipped)
#   LOG_KEYS          optional: "log" (default) writes log_timestamp_format and a [log_windows] table;
#                     "maillog" writes maillog_timestamp_format and one maillog_window line (the
#                     qmail and Courier samples' keys)
#   LOG_TIMESTAMP_FORMAT, QUEUE_COLUMNS, MTA_LABEL, MTA_VERSION, MTA_DELIVERY, optional MTA_LISTEN
# and call: bench_run RUN_DIR DURATION_S RATE_PER_MIN THREADS USERS_FILE SETTINGS_TOML NOTES
# or, to stop the MTA before its logs are cut (its last lines written on SIGTERM kept):
#   bench_load RUN_DIR DURATION_S RATE_PER_MIN THREADS USERS_FILE; stop the MTA; bench_record SETTINGS_TOML NOTES
set -euo pipefail

RECORD_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=chroot.sh
source "$RECORD_DIR/chroot.sh"

SAMPLE_S=5
DRAIN_MAX_S=${DRAIN_MAX_S:-120}
LOG_KEYS=${LOG_KEYS:-log}

# the SMTP sink (smtp_sink.py) in chroot NAME's network namespace, on PORT, recording to LOG;
# its pid in SINK (kill "$SINK"; wait "$SINK" when done)
start_sink() {
    local name=$1 log=$2 port=$3
    nsenter -t "$(holder_pid "$name")" -n -- python3 "$RECORD_DIR/smtp_sink.py" "$log" "$port" &
    # shellcheck disable=SC2034 # the caller's, to stop the sink
    SINK=$!
}

# users file: known local users, then a few unknown ones so that rejects or bounces occur
write_users() {
    local file=$1 known=$2 unknown=$3 domain=$4 i
    : >"$file"
    for i in $(seq 1 "$known"); do echo "user$i@$domain" >>"$file"; done
    for i in $(seq 1 "$unknown"); do echo "nouser$i@$domain" >>"$file"; done
}

# COUNT system accounts user1..userCOUNT (uid 5000+i, group bench) in the running chroot NAME,
# each with ~/Maildir: the recipients of MTAs that deliver to a local user's home
add_maildir_users() {
    # shellcheck disable=SC2016 # expanded by the inner bash
    run "$1" bash -euc '
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
        done' _ "$2"
}

# OpenSMTPD's virtual users in chroot DIR: KNOWN addresses user1..userKNOWN@DOMAIN mapped to the
# system account vmail (/etc/smtpd/bench_users), vmail's home /var/vmail, and HOST resolving to
# loopback
opensmtpd_vmail() {
    local dir=$1 host=$2 known=$3 domain=$4 i
    mkdir -p "$dir/etc/smtpd"
    for i in $(seq 1 "$known"); do echo "user$i@$domain vmail"; done >"$dir/etc/smtpd/bench_users"
    chroot "$dir" getent passwd vmail >/dev/null || chroot "$dir" useradd -r -d /var/vmail -s /usr/sbin/nologin vmail
    mkdir -p "$dir/var/vmail"
    chroot "$dir" chown vmail: /var/vmail
    grep -qs "$host" "$dir/etc/hosts" ||
        echo "127.0.0.1 localhost $host.$domain $host $(hostname)" >>"$dir/etc/hosts"
}

# rsyslogd inside chroot DIR writing mail.* to /var/log/maillog (for MTAs that log through syslog only),
# in rsyslog's default file format or in the TEMPLATE given (RSYSLOG_TraditionalFileFormat: `Nov 28
# 01:02:03 host tag: text`, the BSD syslog files' own)
# shellcheck disable=SC2034 # read by the scripts that source this one
MAILLOG_TIMESTAMP_FORMAT="RFC 3339 with microseconds and offset (rsyslog 8.2302 RSYSLOG_FileFormat), UTC"
rsyslog_maillog() {
    local dir=${1:?chroot dir} template=${2:-}
    # imuxsock's per-process rate limit would drop a daemon's bursts of lines: off
    {
        echo 'module(load="imuxsock" SysSock.RateLimit.Interval="0")'
        printf 'mail.*\t-/var/log/maillog%s\n' "${template:+;$template}"
    } >"$dir/etc/rsyslog.conf"
    rm -f "$dir"/etc/rsyslog.d/*.conf
}

# wait up to 30 s for 127.0.0.1:25 in NAME's network namespace to accept a connection
wait_smtp() {
    local _
    for _ in $(seq 1 30); do
        net "$1" bash -c 'exec 3<>/dev/tcp/127.0.0.1/25' 2>/dev/null && return 0
        sleep 1
    done
    echo "$1: nothing listens on 127.0.0.1:25" >&2
    return 1
}

utc() { date -u +%FT%TZ; }

queue_sampler() {
    echo "utc,incoming,active,deferred,maildrop"
    while :; do
        echo "$(utc),$(queue_counts)"
        sleep "$SAMPLE_S"
    done
}

# bytes of each log at the window start; the cut takes what was appended after
declare -A LOG_START
mark_logs() {
    local spec path
    for spec in "${LOG_FILES[@]}"; do
        path=$(chroot_dir "$MTA_NAME")${spec%%:*}
        LOG_START[$spec]=$(stat -c %s "$path" 2>/dev/null || echo 0)
    done
}

cut_logs() {
    local run_dir=$1 spec path name start end
    LOG_WINDOWS=""
    for spec in "${LOG_FILES[@]}"; do
        path=$(chroot_dir "$MTA_NAME")${spec%%:*}
        name=${spec#*:}
        start=${LOG_START[$spec]}
        end=$(stat -c %s "$path" 2>/dev/null || echo 0)
        # a log the MTA never wrote to in the window is left out (an empty file says nothing)
        [ "$end" -gt "$start" ] || continue
        tail -c +$((start + 1)) "$path" | head -c $((end - start)) | gzip -9n >"$run_dir/$name.gz"
        if [ "$LOG_KEYS" = maillog ]; then
            LOG_WINDOWS+="${LOG_WINDOWS:+; }$name.gz: bytes $start..$end of ${spec%%:*}"
        else
            LOG_WINDOWS+="$name.gz = \"bytes $start..$end of ${spec%%:*} inside the chroot\""$'\n'
        fi
    done
}

# run.toml's top-level keys on the logs (the [log_windows] table follows them for LOG_KEYS=log)
log_keys_top() {
    if [ "$LOG_KEYS" = maillog ]; then
        echo "maillog_window = \"$LOG_WINDOWS inside the chroot (monitor start to log cut)\""
        echo "maillog_timestamp_format = \"$LOG_TIMESTAMP_FORMAT\""
    else
        echo "log_timestamp_format = \"$LOG_TIMESTAMP_FORMAT\""
    fi
}

queue_left_default() { echo "incoming,active,deferred,maildrop=$(queue_counts)"; }

# samplers from the marked log offsets, the bounded load, the drain, samplers stopped
bench_load() {
    RUN_DIR=$1
    local dur=$2 rate=$3 threads=$4 users=$5
    mkdir -p "$RUN_DIR"
    RUN_DIR=$(cd "$RUN_DIR" && pwd)
    LOAD=(postal -t "$threads" -r "$rate" -m 4 127.0.0.1 "$users")
    # a caller's own load loop instead (e.g. postal started again when it dies before its time)
    [ -z "${LOAD_WRAPPER:-}" ] || LOAD=(bash -c "$LOAD_WRAPPER")
    LOAD_DUR=$dur

    mark_logs
    env LC_ALL=C vmstat -t "$SAMPLE_S" >"$RUN_DIR/vmstat.txt" 2>&1 &
    local vm=$!
    env LC_ALL=C iostat -x "$SAMPLE_S" >"$RUN_DIR/iostat.txt" 2>&1 &
    local io=$!
    queue_sampler >"$RUN_DIR/queue.txt" 2>&1 &
    local qs=$!
    MON_START=$(utc)
    sleep "$SAMPLE_S"

    local start_s end_s
    LOAD_RC=0
    LOAD_START=$(utc)
    start_s=$(date +%s.%N)
    # postal ignores SIGINT (it stops sending but never exits): the run always ends in SIGKILL.
    # It writes postal.log (one line per message) where it runs: a scratch folder, not the run's.
    # The redirection is on the command itself: the shell's notice that timeout was killed goes to
    # this script's stderr, not into postal.csv. stdbuf -oL: each per-minute row reaches the file
    # as postal prints it
    local scratch
    scratch=$(mktemp -d)
    (cd "$scratch" && timeout -s INT -k 30 "$dur" nsenter -t "$(holder_pid "$MTA_NAME")" -n -- \
        stdbuf -oL "${LOAD[@]}" >"$RUN_DIR/postal.csv" 2>&1) || LOAD_RC=$?
    rm -rf "$scratch"
    LOAD_END=$(utc)
    end_s=$(date +%s.%N)
    LOAD_S=$(awk -v a="$start_s" -v b="$end_s" 'BEGIN{printf "%.1f", b-a}')

    local drain_start
    drain_start=$(date +%s)
    while [ "$(queue_busy)" -gt 0 ] && [ $(($(date +%s) - drain_start)) -lt "$DRAIN_MAX_S" ]; do
        sleep 1
    done
    DRAINED=$(utc)
    if declare -F queue_left >/dev/null; then QUEUE_LEFT=$(queue_left); else QUEUE_LEFT=$(queue_left_default); fi
    sleep $((SAMPLE_S + 1))
    kill "$vm" "$io" "$qs" 2>/dev/null || true
    wait "$vm" "$io" "$qs" 2>/dev/null || true
    MON_END=$(utc)
}

# the logs cut from the marked offsets, and run.toml
bench_record() {
    local settings=$1 notes=$2
    cut_logs "$RUN_DIR"
    local log_table=""
    [ "$LOG_KEYS" = maillog ] || log_table=$'\n[log_windows]\n'"$LOG_WINDOWS"

    cat >"$RUN_DIR/run.toml" <<EOF
run_id = "$(basename "$RUN_DIR")"
hostname = "$(hostname)"
start_utc = "$LOAD_START"          # load generator started
end_utc = "$LOAD_END"              # load generator exited
duration_s = $LOAD_S
load_exit_code = $LOAD_RC     # exit status of timeout(1): 124 = time limit reached (SIGINT sent, SIGKILL 30 s later if still alive: 137)
monitor_start_utc = "$MON_START"   # vmstat/iostat/queue sampler started
monitor_end_utc = "$MON_END"       # vmstat/iostat/queue sampler stopped
queue_drained_utc = "$DRAINED"  # nothing left to deliver (or drain limit ${DRAIN_MAX_S}s hit)
queue_left_at_stop = "$QUEUE_LEFT"
$(log_keys_top)
kernel = "$(uname -r)"
cpus = $(nproc)
$log_table
[tool]
name = "postal"
version = "$(dpkg-query -W -f '0.75 (Debian package postal ${Version})' postal)"
command = 'timeout -s INT -k 30 $LOAD_DUR ${LOAD[*]}'
output_file = "postal.csv"
vmstat_command = "vmstat -t $SAMPLE_S"
iostat_command = "iostat -x $SAMPLE_S"

[mta]
name = "$MTA_LABEL"
version = "$MTA_VERSION"
listen = "${MTA_LISTEN:-127.0.0.1:25 in a network namespace of its own (chroot $(chroot_dir "$MTA_NAME"))}"
delivery = "$MTA_DELIVERY"

[mta.changed_settings]
$settings

[notes]
text = """$notes Queue sampler columns: $QUEUE_COLUMNS. Shared 2-vCPU VM with other unrelated load."""
EOF
    echo "done $(basename "$RUN_DIR") rc=$LOAD_RC start=$LOAD_START end=$LOAD_END drained=$DRAINED left=$QUEUE_LEFT"
}

# the MTA keeps running while its logs are cut: the window ends a second after the samplers stop
bench_run() {
    bench_load "$1" "$2" "$3" "$4" "$5"
    sleep 1
    bench_record "$6" "$7"
}
