#!/usr/bin/env bash
# Superset 6.1 for the mtabench dashboards, in its own locked venv (envs/superset).
#
#   scripts/superset.sh setup    venv (uv sync --frozen), metadata DB, admin user, roles
#   scripts/superset.sh import   dashboards/ YAML -> Superset (database URI = the serving DuckDB, read-only)
#   scripts/superset.sh serve    gunicorn on 127.0.0.1:$MTABENCH_SUPERSET_PORT (8088) in the background
#   scripts/superset.sh up       setup + import + serve (logs to setup.log); returns at once when
#                                the running server already has this import (make serve)
#   scripts/superset.sh stop     stop the server started by serve
#   scripts/superset.sh export   Superset -> dashboards/ YAML (normalized: stable names, no ids/timestamps)
#   scripts/superset.sh status   is the server up?
#   scripts/superset.sh screenshots [DIR]   up, then a PNG per dashboard into DIR (docs/screenshots)
#
# Environment: MTABENCH_DATA (default data/), MTABENCH_SERVING_DB (default
# $MTABENCH_DATA/serving/mtabench.duckdb), MTABENCH_SUPERSET_HOME (default $MTABENCH_DATA/superset:
# metadata DB, secret key, password, pid and log files), MTABENCH_SUPERSET_USER (admin),
# MTABENCH_SUPERSET_PASSWORD (generated into $MTABENCH_SUPERSET_HOME/admin_password if unset),
# MTABENCH_SUPERSET_SECRET_KEY (generated into $MTABENCH_SUPERSET_HOME/secret_key if unset),
# MTABENCH_SUPERSET_PORT (8088).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
ENV_DIR="$REPO/envs/superset"
VENV="$ENV_DIR/.venv"
DATA="$(realpath -m "${MTABENCH_DATA:-$REPO/data}")"
STATE="$(realpath -m "${MTABENCH_SUPERSET_HOME:-$DATA/superset}")"
SERVING_DB="$(realpath -m "${MTABENCH_SERVING_DB:-$DATA/serving/mtabench.duckdb}")"
PORT="${MTABENCH_SUPERSET_PORT:-8088}"
ADMIN_USER="${MTABENCH_SUPERSET_USER:-admin}"
PIDFILE="$STATE/gunicorn.pid"
LOGFILE="$STATE/gunicorn.log"

export SUPERSET_CONFIG_PATH="$REPO/dashboards/superset_config.py"
export SUPERSET_HOME="$STATE"
export MTABENCH_DATA="$DATA"
export MTABENCH_SUPERSET_HOME="$STATE"
export FLASK_APP="superset.app:create_app()"
export SUPERSET_LOAD_EXAMPLES=no
export PYTHONWARNINGS="${PYTHONWARNINGS:-ignore}"
mkdir -p "$STATE"

superset() { "$VENV/bin/superset" "$@"; }
py() { "$VENV/bin/python" "$@"; }

admin_password() {
    if [ -n "${MTABENCH_SUPERSET_PASSWORD:-}" ]; then
        printf '%s' "$MTABENCH_SUPERSET_PASSWORD"
        return
    fi
    local f="$STATE/admin_password"
    if [ ! -s "$f" ]; then
        (umask 077 && py -c 'import secrets; print(secrets.token_urlsafe(18))' >"$f")
        echo "superset: generated the admin password into $f" >&2
    fi
    tr -d '\n' <"$f"
}

cmd_setup() {
    command -v uv >/dev/null 2>&1 || python3 -m pip install --quiet "uv==0.13.9"
    uv sync --frozen --quiet --project "$ENV_DIR"
    superset db upgrade
    # the password goes through a pipe, never a command line (`ps` shows those to everyone)
    admin_password | py "$REPO/dashboards/create_admin.py" "$ADMIN_USER"
    superset init
}

cmd_import() {
    [ -f "$SERVING_DB" ] || { echo "superset: $SERVING_DB missing (run: uv run mtabench run)" >&2; exit 1; }
    local zip="$STATE/import.zip"
    py "$REPO/dashboards/assets.py" bundle --src "$REPO/dashboards" --out "$zip" \
        --uri "duckdb:///$SERVING_DB"
    # The database bundle first (import-dashboards never updates an existing database's URI),
    # then datasets and charts with overwrite (import-dashboards keeps existing ones), then:
    py "$REPO/dashboards/assets.py" import-models --zip "$zip" --user "$ADMIN_USER"
    superset import-dashboards -p "$zip" -u "$ADMIN_USER"
    rm -f "$zip"
}

cmd_export() {
    local zip="$STATE/export.zip"
    rm -f "$zip"
    superset export-dashboards -f "$zip"
    py "$REPO/dashboards/assets.py" normalize --zip "$zip" --dest "${1:-$REPO/dashboards}"
    rm -f "$zip"
}

is_running() { [ -s "$PIDFILE" ] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; }

# What a running server loaded at start: its configuration, the serving guard it imports, the lock.
SERVED_CONFIG="$STATE/config.sha256"
config_fingerprint() {
    cat "$REPO/dashboards/superset_config.py" "$REPO/dashboards/serving_guard.py" "$ENV_DIR/uv.lock" \
        | sha256sum | cut -d' ' -f1
}

cmd_serve() {
    if is_running; then
        echo "superset: already running (pid $(cat "$PIDFILE")) on http://127.0.0.1:$PORT"
        return
    fi
    rm -f "$PIDFILE"
    config_fingerprint >"$SERVED_CONFIG"
    setsid "$VENV/bin/gunicorn" -w 2 -k gthread --threads 4 --timeout 120 \
        -b "127.0.0.1:$PORT" --pid "$PIDFILE" --chdir "$STATE" --access-logfile - \
        "superset.app:create_app()" >>"$LOGFILE" 2>&1 </dev/null &
    disown
    local i
    for i in $(seq 1 120); do
        if py -c "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=2).read() == b'OK' else 1)" 2>/dev/null; then
            echo "superset: up on http://127.0.0.1:$PORT (pid $(cat "$PIDFILE"), log $LOGFILE, user $ADMIN_USER)"
            return
        fi
        sleep 1
    done
    echo "superset: not healthy after 120 s; tail of $LOGFILE:" >&2
    tail -n 40 "$LOGFILE" >&2
    exit 1
}

cmd_stop() {
    if ! is_running; then
        echo "superset: not running"
        rm -f "$PIDFILE"
        return
    fi
    local pid
    pid="$(cat "$PIDFILE")"
    kill -TERM "$pid"
    for _ in $(seq 1 30); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    rm -f "$PIDFILE"
    echo "superset: stopped"
}

# What an import depends on: the dashboards' YAML, the serving path and Superset's own lock.
import_fingerprint() {
    { printf '%s\n' "$SERVING_DB"; cat "$ENV_DIR/uv.lock"
      find "$REPO/dashboards" -type f ! -name '*.pyc' -print0 | sort -z | xargs -0 sha256sum; } \
        | sha256sum | cut -d' ' -f1
}

# `make serve`: set up, import and serve, unless this very import is already being served.
cmd_up() {
    local stamp="$STATE/import.sha256" log="$STATE/setup.log" want
    want="$(import_fingerprint)"
    # a server started with another configuration keeps it (the serving guards included) until
    # it restarts: restart it rather than report it as serving this one
    if is_running && [ "$(cat "$SERVED_CONFIG" 2>/dev/null)" != "$(config_fingerprint)" ]; then
        echo "superset: configuration changed since the server started; restarting it"
        cmd_stop
    fi
    if is_running && [ -s "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        echo "superset: already running (pid $(cat "$PIDFILE")) on http://127.0.0.1:$PORT; dashboards and serving path unchanged, nothing to import"
        return
    fi
    echo "superset: setup and import (log: $log)"
    if ! { cmd_setup && cmd_import; } >"$log" 2>&1; then
        echo "superset: setup/import failed; tail of $log:" >&2
        tail -n 40 "$log" >&2
        exit 1
    fi
    printf '%s\n' "$want" >"$stamp"
    cmd_serve
}

# `make screenshots`: every dashboard rendered in headless Chromium by dashboards/render_check.py
# (which also fails on a chart without rows), one PNG per dashboard slug.
cmd_screenshots() {
    local dest="${1:-$REPO/docs/screenshots}" pw
    cmd_up
    pw="$(mktemp)"  # mode 600; the password never goes on a command line
    admin_password >"$pw"
    local rc=0
    py "$REPO/dashboards/render_check.py" --base "http://127.0.0.1:$PORT" --user "$ADMIN_USER" \
        --password-file "$pw" --png-dir "$dest" >"$STATE/screenshots.json" || rc=$?
    rm -f "$pw"
    [ "$rc" = 0 ] || { echo "superset: render check failed; report in $STATE/screenshots.json" >&2; exit "$rc"; }
    echo "superset: screenshots in $dest (report $STATE/screenshots.json)"
}

cmd_status() {
    if is_running; then echo "superset: running (pid $(cat "$PIDFILE")) on http://127.0.0.1:$PORT"
    else echo "superset: not running"; exit 1; fi
}

case "${1:-}" in
    setup) cmd_setup ;;
    import) cmd_import ;;
    export) shift; cmd_export "$@" ;;
    serve) cmd_serve ;;
    up) cmd_up ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    screenshots) shift; cmd_screenshots "$@" ;;
    *) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
