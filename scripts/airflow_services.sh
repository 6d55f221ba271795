#!/usr/bin/env bash
# Airflow 3 services for mtabench, loopback only:
#
#   scripts/airflow_services.sh start    set up (scripts/airflow_env.sh), start api-server,
#                                        scheduler, dag-processor and triggerer, wait for health
#   scripts/airflow_services.sh stop     stop them (each by its recorded process group)
#   scripts/airflow_services.sh status   which run, and the API's health report
#
# All on 127.0.0.1: api-server --host 127.0.0.1 (port MTABENCH_AIRFLOW_PORT, default 8080), no
# log servers (--skip-serve-logs), no scheduler health server; tasks reach the execution API at
# http://127.0.0.1:PORT/execution/. LocalExecutor with parallelism 4, SQLite metadata DB.
# Logs: $AIRFLOW_HOME/logs/services/<service>.log; pids: $AIRFLOW_HOME/run/<service>.pid.
# The DAG's paths (MTABENCH_INBOX, MTABENCH_DATA, ...) are taken from this script's environment.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

usage() { echo "usage: $0 start|stop|status" >&2; exit 2; }
[ $# -eq 1 ] || usage
action="$1"

if [ "$action" = start ]; then
    bash "$here/airflow_env.sh"
fi
# shellcheck source=scripts/airflow_env.sh
. "$here/airflow_env.sh"

run_dir="$AIRFLOW_HOME/run"
log_dir="$AIRFLOW_HOME/logs/services"
services=(api-server scheduler dag-processor triggerer)
health_url="http://127.0.0.1:${MTABENCH_AIRFLOW_PORT}/api/v2/monitor/health"

service_cmd() {
    case "$1" in
        api-server) echo "airflow api-server --host 127.0.0.1 --port $MTABENCH_AIRFLOW_PORT" ;;
        scheduler) echo "airflow scheduler --skip-serve-logs" ;;
        dag-processor) echo "airflow dag-processor" ;;
        triggerer) echo "airflow triggerer --skip-serve-logs" ;;
    esac
}

pid_of() { cat "$run_dir/$1.pid" 2>/dev/null || true; }

alive() {
    local pid
    pid="$(pid_of "$1")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

start() {
    mkdir -p "$run_dir" "$log_dir"
    local s
    for s in "${services[@]}"; do
        if alive "$s"; then
            echo "$s: already running (pid $(pid_of "$s"))"
            continue
        fi
        # setsid: each service leads its own process group, so stop ends it and its children only
        # shellcheck disable=SC2046
        setsid $(service_cmd "$s") >>"$log_dir/$s.log" 2>&1 </dev/null &
        echo $! >"$run_dir/$s.pid"
        echo "$s: started (pid $!, log $log_dir/$s.log)"
    done
    local deadline=$((SECONDS + ${MTABENCH_AIRFLOW_START_TIMEOUT:-180}))
    until curl -fsS -o /dev/null "$health_url" 2>/dev/null; do
        for s in "${services[@]}"; do
            if ! alive "$s"; then
                echo "$s exited; last lines of $log_dir/$s.log:" >&2
                tail -20 "$log_dir/$s.log" >&2
                exit 1
            fi
        done
        if [ $SECONDS -ge $deadline ]; then
            echo "api-server not healthy at $health_url after ${MTABENCH_AIRFLOW_START_TIMEOUT:-180} s" >&2
            exit 1
        fi
        sleep 1
    done
    echo "Airflow API healthy: http://127.0.0.1:${MTABENCH_AIRFLOW_PORT}/ (user $MTABENCH_AIRFLOW_USER," \
        "password in $AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE)"
}

stop() {
    local s pid i
    for s in triggerer dag-processor scheduler api-server; do
        pid="$(pid_of "$s")"
        if [ -z "$pid" ]; then
            continue
        fi
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
            for i in $(seq 1 60); do
                # the group is gone when no process is left in it
                pgrep -g "$pid" >/dev/null 2>&1 || break
                sleep 0.5
            done
            if pgrep -g "$pid" >/dev/null 2>&1; then
                echo "$s: still running after 30 s, killing" >&2
                kill -KILL -- "-$pid" 2>/dev/null || true
            fi
            echo "$s: stopped"
        fi
        rm -f "$run_dir/$s.pid"
    done
}

status() {
    local s rc=0
    for s in "${services[@]}"; do
        if alive "$s"; then
            echo "$s: running (pid $(pid_of "$s"))"
        else
            echo "$s: stopped"
            rc=3
        fi
    done
    if curl -fsS "$health_url" 2>/dev/null; then
        echo
    else
        echo "api: not answering at $health_url"
        rc=3
    fi
    return $rc
}

case "$action" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    *) usage ;;
esac
