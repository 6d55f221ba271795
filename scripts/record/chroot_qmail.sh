#!/bin/bash
# A Debian 12 chroot with its own network namespace, for one MTA that conflicts with the
# host's Postfix (notqmail, Courier). Needs root, debootstrap and iproute2.
#
#   chroot_qmail.sh create NAME [package...]   debootstrap (once, shared base) + apt-get install
#   chroot_qmail.sh up NAME                      network namespace mta-NAME with lo up
#   chroot_qmail.sh run NAME cmd...              cmd inside the chroot, in that namespace
#   chroot_qmail.sh host NAME cmd...             a host binary (postal) in that namespace
#   chroot_qmail.sh down NAME                    end the namespace's processes, drop it
#   chroot_qmail.sh dir NAME                     print the chroot's path
#
# /dev is the chroot's own on-disk device nodes (debootstrap makes them), not the host's
# /dev bound in: a syslog daemon inside then makes its /dev/log in the chroot, where every
# process of the chroot sees it, and never touches the host's. proc is mounted per `run`
# in a private mount namespace, so nothing stays mounted on the host afterwards.
set -euo pipefail

ROOT=${CHROOT_ROOT:-/work/chroots}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

die() { echo "chroot_qmail.sh: $*" >&2; exit 1; }
dir_of() { echo "$ROOT/$1"; }
ns_of() { echo "mta-$1"; }

in_chroot() { # DIR cmd...: chroot with proc mounted in a private mount namespace
    local d=$1; shift
    unshare --mount --propagation private -- bash -c '
        d=$1; shift
        mount -t proc proc "$d/proc"
        exec chroot "$d" "$@"' _ "$d" "$@"
}

create() {
    local name=$1; shift
    local d; d=$(dir_of "$name")
    if [ ! -d "$ROOT/base/usr" ]; then
        debootstrap --variant=minbase bookworm "$ROOT/base" "$MIRROR"
    fi
    if [ ! -d "$d/usr" ]; then
        cp -a "$ROOT/base" "$d"
        cp /etc/resolv.conf "$d/etc/resolv.conf"
        # packages must not start services on install: the recording starts them itself
        printf '#!/bin/sh\nexit 101\n' > "$d/usr/sbin/policy-rc.d"
        chmod 755 "$d/usr/sbin/policy-rc.d"
    fi
    if [ $# -gt 0 ]; then
        in_chroot "$d" apt-get update -qq
        DEBIAN_FRONTEND=noninteractive in_chroot "$d" apt-get install -y -qq --no-install-recommends "$@"
    fi
}

up() {
    local ns; ns=$(ns_of "$1")
    ip netns list | grep -qw "^$ns" || ip netns add "$ns"
    ip -n "$ns" link set lo up
}

run() {
    local name=$1; shift
    ip netns exec "$(ns_of "$name")" "$(readlink -f "$0")" _chroot "$(dir_of "$name")" "$@"
}

host() {
    # exec: no shell left to report a killed child (postal) into the caller's output
    local name=$1; shift
    exec ip netns exec "$(ns_of "$name")" "$@"
}

down() {
    local ns; ns=$(ns_of "$1")
    ip netns list | grep -qw "^$ns" || return 0
    local pids; pids=$(ip netns pids "$ns" || true)
    [ -n "$pids" ] && kill $pids 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        [ -z "$(ip netns pids "$ns")" ] && break
        sleep 1
    done
    pids=$(ip netns pids "$ns" || true)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
    ip netns del "$ns"
}

cmd=${1:-}; [ -n "$cmd" ] || die "usage: $0 create|up|run|host|down|dir NAME ..."
shift
case $cmd in
    create) create "$@" ;;
    up) up "$@" ;;
    run) run "$@" ;;
    host) host "$@" ;;
    down) down "$@" ;;
    dir) dir_of "$1" ;;
    _chroot) in_chroot "$@" ;;
    *) die "unknown command $cmd" ;;
esac
