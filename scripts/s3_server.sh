#!/usr/bin/env bash
# An S3-compatible server on loopback (s3s-fs: S3 over a local folder, Apache-2.0) for the
# Spark engine's storage by URI (mtabench/engines/spark/storage.py) and its tests.
#
#   scripts/s3_server.sh install   build s3s-fs $VERSION with scripts/s3s-fs.patch into a
#                                  cache outside the clone; idempotent: skipped when that
#                                  version and patch are there (the first build compiles for
#                                  3-9 min; MTABENCH_CARGO_JOBS limits cargo's parallel jobs)
#   scripts/s3_server.sh start     install, then serve $MTABENCH_S3_HOME/data on 127.0.0.1 in
#                                  the background; prints the endpoint
#   scripts/s3_server.sh env       the variables a client needs (shell `export` lines):
#                                  MTABENCH_S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
#                                  AWS_REGION; e.g. eval "$(scripts/s3_server.sh env)"
#   scripts/s3_server.sh stop      stop the server started by start
#   scripts/s3_server.sh status    is it up?
#
# Environment: MTABENCH_S3_HOME (default $MTABENCH_DATA/s3, MTABENCH_DATA default data/: the
# served folder data/ (a bucket is a folder in it), pid, log, endpoint and credentials files),
# MTABENCH_S3_PORT (default: a free port chosen by the server), MTABENCH_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/mtabench: where the binary is installed, so a fresh clone reuses
# it). Credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY when both are set, otherwise
# generated once into $MTABENCH_S3_HOME/credentials (mode 600). s3s-fs takes them only as
# arguments, so they are visible in `ps` to local users: a loopback test server, not a vault.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
VERSION=0.14.1 # its later releases need rustc >= 1.96
CACHE="$(realpath -m "${MTABENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mtabench}")"
PATCH="$REPO/scripts/s3s-fs.patch"
# cargo install --root: one folder per version and patch
ROOT="$CACHE/s3s-fs-$VERSION-$(sha256sum "$PATCH" | cut -c1-8)"
BIN="$ROOT/bin/s3s-fs"
DATA="$(realpath -m "${MTABENCH_DATA:-$REPO/data}")"
STATE="$(realpath -m "${MTABENCH_S3_HOME:-$DATA/s3}")"
PIDFILE="$STATE/s3s-fs.pid"
LOGFILE="$STATE/s3s-fs.log"
ENDPOINT_FILE="$STATE/endpoint"
CREDENTIALS="$STATE/credentials"

installed() { [ -x "$BIN" ] && [ "$("$BIN" --version 2>/dev/null)" = "s3s-fs $VERSION" ]; }

# The published crate, as cargo downloads it into its registry cache
cached_crate() {
    local f
    for f in "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"s3s-fs-$VERSION.crate"; do
        [ -f "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}

crate_file() {
    cached_crate && return
    local probe="$1/fetch" # a manifest depending on the crate, for `cargo fetch` to download it
    mkdir -p "$probe/src"
    printf '[package]\nname = "fetch-s3s-fs"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\ns3s-fs = "=%s"\n' \
        "$VERSION" >"$probe/Cargo.toml"
    : >"$probe/src/lib.rs"
    cargo fetch --quiet --manifest-path "$probe/Cargo.toml"
    cached_crate
}

cmd_install() {
    installed && return
    mkdir -p "$CACHE"
    # one build at a time (parallel test workers start the server side by side)
    exec 9>"$CACHE/.s3s-fs.lock"
    flock 9
    installed && return
    command -v cargo >/dev/null 2>&1 || { echo "s3_server: cargo is needed (rustup.rs)" >&2; exit 1; }
    echo "s3_server: building s3s-fs $VERSION (+ $(basename "$PATCH")) into $ROOT" >&2
    BUILD="$(mktemp -d "$CACHE/.s3s-fs-build.XXXXXX")"
    trap 'rm -rf "$BUILD"' EXIT
    local build="$BUILD" crate
    crate="$(crate_file "$build")"
    tar -xzf "$crate" -C "$build"
    patch --quiet -p1 -d "$build/s3s-fs-$VERSION" <"$PATCH"
    # --locked: the crate's own Cargo.lock (newer dependencies need a newer rustc)
    cargo install --path "$build/s3s-fs-$VERSION" --locked --features binary --root "$ROOT" \
        --target-dir "$build/target" --quiet ${MTABENCH_CARGO_JOBS:+-j "$MTABENCH_CARGO_JOBS"}
    installed || { echo "s3_server: $BIN is not s3s-fs $VERSION after the build" >&2; exit 1; }
    mkdir -p "$CACHE/bin"
    ln -sfn "$BIN" "$CACHE/bin/s3s-fs"
}

credentials() {
    if [ -n "${AWS_ACCESS_KEY_ID:-}" ] && [ -n "${AWS_SECRET_ACCESS_KEY:-}" ]; then
        printf '%s\n%s\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY"
        return
    fi
    if [ ! -s "$CREDENTIALS" ]; then
        # the secret starts with a letter: a leading "-" would trip tools that parse it as an option
        (umask 077 && python3 -c 'import secrets; print("mtabench" + secrets.token_hex(6)); print("s" + secrets.token_urlsafe(30))' >"$CREDENTIALS")
        echo "s3_server: generated credentials into $CREDENTIALS" >&2
    fi
    cat "$CREDENTIALS"
}

running() { [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

cmd_start() {
    cmd_install
    mkdir -p "$STATE/data"
    if running; then
        cat "$ENDPOINT_FILE"
        return
    fi
    local key secret pid port=""
    { read -r key && read -r secret; } < <(credentials)
    rm -f "$ENDPOINT_FILE" "$LOGFILE" # a previous log's port must not be read as this one's
    # --opt=value: a user's key may start with "-", which the server would read as an option.
    # port 0: the server binds a free port and logs it ("server is running at http://...")
    RUST_LOG="${RUST_LOG:-s3s_fs=info}" setsid "$BIN" --host 127.0.0.1 --port "${MTABENCH_S3_PORT:-0}" \
        --access-key="$key" --secret-key="$secret" "$STATE/data" </dev/null >"$LOGFILE" 2>&1 &
    pid=$!
    echo "$pid" >"$PIDFILE"
    for _ in $(seq 100); do
        # the log may not exist yet: the background shell creates it as the server starts
        port="$(sed -n 's#.*server is running at http://127\.0\.0\.1:\([0-9]*\).*#\1#p' "$LOGFILE" 2>/dev/null | head -1 || true)"
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if [ -z "$port" ]; then
        echo "s3_server: s3s-fs did not start; its log ($LOGFILE):" >&2
        cat "$LOGFILE" >&2
        cmd_stop
        exit 1
    fi
    echo "http://127.0.0.1:$port" >"$ENDPOINT_FILE"
    cat "$ENDPOINT_FILE"
}

cmd_env() {
    running || { echo "s3_server: not running (scripts/s3_server.sh start)" >&2; exit 1; }
    local key secret
    { read -r key && read -r secret; } < <(credentials)
    printf 'export MTABENCH_S3_ENDPOINT=%q\n' "$(cat "$ENDPOINT_FILE")"
    printf 'export AWS_ACCESS_KEY_ID=%q\nexport AWS_SECRET_ACCESS_KEY=%q\n' "$key" "$secret"
    printf 'export AWS_REGION=%q\n' "${AWS_REGION:-us-east-1}"
}

cmd_stop() {
    [ -s "$PIDFILE" ] || return 0
    local pid
    pid="$(cat "$PIDFILE")"
    if kill -0 "$pid" 2>/dev/null; then
        kill -INT "$pid" # its Ctrl-C handler: in-flight requests finish (10 s at most)
        for _ in $(seq 120); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    rm -f "$PIDFILE" "$ENDPOINT_FILE"
}

cmd_status() {
    if running; then
        echo "s3s-fs up at $(cat "$ENDPOINT_FILE") (pid $(cat "$PIDFILE"), data $STATE/data)"
    else
        echo "s3s-fs down"
        exit 3
    fi
}

case "${1:-}" in
    install) cmd_install ;;
    start) cmd_start ;;
    env) cmd_env ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    *)
        sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
        exit 2
        ;;
esac
