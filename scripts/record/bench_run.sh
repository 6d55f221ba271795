#!/bin/bash
# One bounded benchmark run against an MTA in a chroot (chroot.sh): samplers, load, log cut, run.toml.
# Sourced by the per-MTA scripts, which set:
#   MTA_NAME          chroot name (chroot.sh)
#   queue_counts      function printing "incoming,active,deferred,maildrop" of the MTA's own queue
#   queue_busy        function printing the number of messages still to deliver (drain test)
#   LOG_FILES         array of "path-inside-chroot:name-in-run-folder" (cut to the run window, gzipped)
# and call: bench_run RUN_DIR DURATION_S RATE_PER_MIN THREADS USERS_FILE SETTINGS_TOML NOTES
set -euo pipefail

RECORD_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=chroot.sh
source "$RECORD_DIR/chroot.sh"

SAMPLE_S=5
DRAIN_MAX_S=${DRAIN_MAX_S:-120}

# users file: known local users, then a few unknown ones so that rejects or bounces occur
write_users() {
    local file=$1 known=$2 unknown=$3 domain=$4 i
    : >"$file"
    for i in $(seq 1 "$known"); do echo "user$i@$domain" >>"$file"; done
    for i in $(seq 1 "$unknown"); do echo "nouser$i@$domain" >>"$file"; done
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
        LOG_WINDOWS+="$name.gz = \"bytes $start..$end of ${spec%%:*} inside the chroot\""$'\n'
    done
}

bench_run() {
    local run_dir=$1 dur=$2 rate=$3 threads=$4 users=$5 settings=$6 notes=$7
    mkdir -p "$run_dir"
    run_dir=$(cd "$run_dir" && pwd)
    local load=(postal -t "$threads" -r "$rate" -m 4 127.0.0.1 "$users")

    mark_logs
    env LC_ALL=C vmstat -t "$SAMPLE_S" >"$run_dir/vmstat.txt" 2>&1 &
    local vm=$!
    env LC_ALL=C iostat -x "$SAMPLE_S" >"$run_dir/iostat.txt" 2>&1 &
    local io=$!
    queue_sampler >"$run_dir/queue.txt" 2>&1 &
    local qs=$!
    local mon_start
    mon_start=$(utc)
    sleep "$SAMPLE_S"

    local start end start_s end_s rc=0
    start=$(utc)
    start_s=$(date +%s.%N)
    # postal ignores SIGINT (it stops sending but never exits): the run always ends in SIGKILL.
    # It writes postal.log (one line per message) where it runs: a scratch folder, not the run's
    local scratch
    scratch=$(mktemp -d)
    (cd "$scratch" && timeout -s INT -k 30 "$dur" nsenter -t "$(holder_pid "$MTA_NAME")" -n -- \
        stdbuf -oL "${load[@]}" >"$run_dir/postal.csv" 2>&1) || rc=$?
    rm -rf "$scratch"
    end=$(utc)
    end_s=$(date +%s.%N)

    local drain_start drained
    drain_start=$(date +%s)
    while [ "$(queue_busy)" -gt 0 ] && [ $(($(date +%s) - drain_start)) -lt "$DRAIN_MAX_S" ]; do
        sleep 1
    done
    drained=$(utc)
    local left
    left=$(queue_counts)
    sleep $((SAMPLE_S + 1))
    kill "$vm" "$io" "$qs" 2>/dev/null || true
    wait "$vm" "$io" "$qs" 2>/dev/null || true
    local mon_end
    mon_end=$(utc)
    sleep 1
    cut_logs "$run_dir"

    cat >"$run_dir/run.toml" <<EOF
run_id = "$(basename "$run_dir")"
hostname = "$(hostname)"
start_utc = "$start"          # load generator started
end_utc = "$end"              # load generator exited
duration_s = $(awk -v a="$start_s" -v b="$end_s" 'BEGIN{printf "%.1f", b-a}')
load_exit_code = $rc     # exit status of timeout(1): 124 = time limit reached (SIGINT sent, SIGKILL 30 s later if still alive)
monitor_start_utc = "$mon_start"   # vmstat/iostat/queue sampler started
monitor_end_utc = "$mon_end"       # vmstat/iostat/queue sampler stopped
queue_drained_utc = "$drained"  # nothing left to deliver (or drain limit ${DRAIN_MAX_S}s hit)
queue_left_at_stop = "incoming,active,deferred,maildrop=$left"
log_timestamp_format = "$LOG_TIMESTAMP_FORMAT"
kernel = "$(uname -r)"
cpus = $(nproc)

[log_windows]
$LOG_WINDOWS
[tool]
name = "postal"
version = "$(dpkg-query -W -f '0.75 (Debian package postal ${Version})' postal)"
command = 'timeout -s INT -k 30 $dur ${load[*]}'
output_file = "postal.csv"
vmstat_command = "vmstat -t $SAMPLE_S"
iostat_command = "iostat -x $SAMPLE_S"

[mta]
name = "$MTA_LABEL"
version = "$MTA_VERSION"
listen = "127.0.0.1:25 in a network namespace of its own (chroot $(chroot_dir "$MTA_NAME"))"
delivery = "$MTA_DELIVERY"

[mta.changed_settings]
$settings

[notes]
text = """$notes Queue sampler columns: $QUEUE_COLUMNS. Shared 2-vCPU VM with other unrelated load."""
EOF
    echo "done $(basename "$run_dir") rc=$rc start=$start end=$end drained=$drained left=$left"
}
