#!/bin/bash
# A Debian chroot per MTA (Debian 12 unless MTABENCH_SUITE names another suite), run in its own
# mount, PID and network namespace.
#
# Every MTA package conflicts with the host's Postfix (mail-transport-agent), so each one lives in
# /work/chroots/<name> (outside any git tree) and listens on the loopback of a namespace of its
# own: its port 25 never meets the host's. The namespace is held by one process (PID 1 of the
# new PID namespace); killing it ends every process inside and drops its mounts with it.
#
#   chroot.sh create NAME PKG...   debootstrap (one cached base copied per MTA) + apt-get install
#   chroot.sh up NAME              start the holder: lo up; /proc, a /dev of its own and /run in the chroot
#   chroot.sh run NAME CMD...      run CMD inside the chroot, in the namespaces
#   chroot.sh net NAME CMD...      run a host command in the namespace's network only (load generator)
#   chroot.sh pids NAME            the processes inside, holder excepted (host PIDs)
#   chroot.sh down NAME            SIGTERM everything inside, then end the holder (and with it the rest)
#   chroot.sh remove NAME          down, then delete the chroot
#
# /dev inside is a tmpfs of the namespace: a syslog daemon inside makes its /dev/log there, where
# every process run through `run` sees it, and never touches the host's.
#
# Needs root, debootstrap, util-linux (unshare, nsenter) and iproute2 on the host.
set -euo pipefail

CHROOTS=${MTABENCH_CHROOTS:-/work/chroots}
SUITE=${MTABENCH_SUITE:-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

chroot_dir() { echo "$CHROOTS/$1"; }
holder_pidfile() { echo "$CHROOTS/$1.holder.pid"; }

holder_pid() {
    local f
    f=$(holder_pidfile "$1")
    [ -s "$f" ] || return 1
    local pid
    pid=$(cat "$f")
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

create() {
    local name=$1
    shift
    local dir base="$CHROOTS/.base"
    dir=$(chroot_dir "$name")
    mkdir -p "$CHROOTS"
    if [ ! -x "$base/bin/sh" ]; then
        debootstrap --variant=minbase "$SUITE" "$base.tmp" "$MIRROR"
        mv "$base.tmp" "$base"
    fi
    if [ ! -x "$dir/bin/sh" ]; then
        cp -a "$base" "$dir.tmp"
        mv "$dir.tmp" "$dir"
    fi
    # no init system inside: package scripts must not try to start daemons
    printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
    chmod +x "$dir/usr/sbin/policy-rc.d"
    cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
    if [ $# -gt 0 ]; then
        # apt runs on the host network (the registry), in a mount namespace of its own
        # shellcheck disable=SC2016 # expanded by the inner sh
        unshare --mount --propagation private sh -c "$MOUNTS"'
            d=$1; shift
            chroot "$d" apt-get update -qq
            DEBIAN_FRONTEND=noninteractive chroot "$d" apt-get install -y -qq --no-install-recommends "$@"
            ' create "$dir" "$@"
    fi
}

# The chroot's /proc, a /dev of its own (a few device nodes bound from the host: a daemon creating
# /dev/log must not replace the host's) and a /run in memory. Run inside a private mount namespace.
# shellcheck disable=SC2016 # expanded by the inner sh
MOUNTS='
    set -e
    mount -t proc proc "$1/proc"
    mount -t tmpfs -o mode=755 tmpfs "$1/dev"
    for d in null zero full random urandom tty; do
        touch "$1/dev/$d"
        mount --bind "/dev/$d" "$1/dev/$d"
    done
    mkdir -p "$1/dev/pts" "$1/dev/shm"
    mount -t tmpfs tmpfs "$1/dev/shm"
    ln -s /proc/self/fd "$1/dev/fd"
    mount -t tmpfs -o mode=755 tmpfs "$1/run"
    mkdir -p "$1/run/lock"
'

up() {
    local name=$1 dir pidfile
    dir=$(chroot_dir "$name")
    pidfile=$(holder_pidfile "$name")
    [ -x "$dir/bin/sh" ] || { echo "no chroot at $dir (run: $0 create $name ...)" >&2; exit 1; }
    if holder_pid "$name" >/dev/null; then
        echo "$name is already up (holder $(cat "$pidfile"))" >&2
        return 0
    fi
    # mounts made inside a private mount namespace vanish with it; /proc is the new PID namespace's
    unshare --mount --propagation private --net --pid --fork sh -c "$MOUNTS"'
        ip link set lo up
        exec sleep infinity' holder "$dir" >/dev/null 2>&1 &
    local unshare_pid=$!
    # the holder is unshare's child (PID 1 inside); wait for its mounts
    local _ pid=""
    for _ in $(seq 1 50); do
        pid=$(pgrep -P "$unshare_pid" -x sleep || true)
        [ -n "$pid" ] && break
        sleep 0.1
    done
    [ -n "$pid" ] || { echo "namespace holder did not start" >&2; kill "$unshare_pid" 2>/dev/null; exit 1; }
    echo "$pid" >"$pidfile"
    echo "$unshare_pid" >"$pidfile.unshare"
    echo "$name up: holder $pid, $(nsenter -t "$pid" -n ip -brief addr show lo)"
}

run() {
    local name=$1 pid
    shift
    pid=$(holder_pid "$name") || { echo "$name is not up" >&2; exit 1; }
    nsenter -t "$pid" -m -n -p -- chroot "$(chroot_dir "$name")" env -i \
        PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TZ=UTC "$@"
}

net() {
    local name=$1 pid
    shift
    pid=$(holder_pid "$name") || { echo "$name is not up" >&2; exit 1; }
    nsenter -t "$pid" -n -- "$@"
}

# host PIDs of the live processes in the holder's PID namespace, the holder itself left out
pids() {
    local pid ns p
    pid=$(holder_pid "$1") || return 0
    ns=$(readlink "/proc/$pid/ns/pid")
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [ "$p" != "$pid" ] || continue
        [ "$(readlink "/proc/$p/ns/pid" 2>/dev/null)" = "$ns" ] || continue
        # orphans end as zombies under the holder (sleep reaps none): nothing left to stop
        grep -q '^State:[[:space:]]*Z' "/proc/$p/status" 2>/dev/null && continue
        echo "$p"
    done
}

down() {
    local name=$1 pidfile pid
    pidfile=$(holder_pidfile "$name")
    if pid=$(holder_pid "$name"); then
        # SIGTERM first, so that daemons and their loggers write out their last lines
        local left _
        left=$(pids "$name")
        # shellcheck disable=SC2086 # a list of PIDs
        [ -z "$left" ] || kill -TERM $left 2>/dev/null || true
        for _ in $(seq 1 10); do
            [ -n "$(pids "$name")" ] || break
            sleep 1
        done
        # PID 1 of the namespace: SIGKILL from outside ends it and every process still inside
        kill -KILL "$pid"
        local u
        u=$(cat "$pidfile.unshare" 2>/dev/null || true)
        if [ -n "$u" ]; then wait "$u" 2>/dev/null || true; fi
    fi
    rm -f "$pidfile" "$pidfile.unshare"
}

remove() {
    down "$1"
    local dir
    dir=$(chroot_dir "$1")
    rm -rf --one-file-system "$dir"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    cmd=${1:?usage: $0 create|up|run|net|pids|down|remove NAME ...}
    shift
    case $cmd in
    create | up | run | net | pids | down | remove) "$cmd" "$@" ;;
    *) echo "unknown command: $cmd" >&2; exit 2 ;;
    esac
fi
