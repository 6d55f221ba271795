#!/usr/bin/env bash
# The project's Airflow 3 environment (envs/airflow: apache-airflow 3.3.2 + astronomer-cosmos),
# kept apart from the data venv (.venv: duckdb, dbt, GX), which the DAG's tasks call.
#
#   scripts/airflow_env.sh                 set up (idempotent; ~1 s when already done):
#                                          uv sync --frozen, secrets + admin password on first
#                                          run, airflow db migrate, pool mtabench_duckdb (1 slot)
#   scripts/airflow_env.sh CMD [ARGS...]   set up, then run CMD in the environment, e.g.
#                                          scripts/airflow_env.sh airflow dags list
#   . scripts/airflow_env.sh               (sourced) only export the environment
#
# Environment: MTABENCH_AIRFLOW_HOME (default data/airflow), MTABENCH_AIRFLOW_PORT (8080),
# MTABENCH_AIRFLOW_USER (admin), MTABENCH_AIRFLOW_PASSWORD (default: generated once into
# $AIRFLOW_HOME/simple_auth_manager_passwords.json). Secrets (fernet key, API secret key, JWT
# secret) are generated once into $AIRFLOW_HOME/secrets.env (mode 600; data/ is gitignored).

_mtabench_airflow_export() {
    local repo
    repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
    export MTABENCH_REPO="${MTABENCH_REPO:-$repo}"
    export MTABENCH_AIRFLOW_VENV="$MTABENCH_REPO/envs/airflow/.venv"
    # the triggerer imports the dbt sensors' trigger (mtabench.airflow.watcher) by its class
    # path; DAG files put the repo on sys.path themselves, the triggerer parses none
    case ":${PYTHONPATH:-}:" in
        *":$MTABENCH_REPO:"*) ;;
        *) export PYTHONPATH="$MTABENCH_REPO${PYTHONPATH:+:$PYTHONPATH}" ;;
    esac
    export MTABENCH_AIRFLOW_PORT="${MTABENCH_AIRFLOW_PORT:-8080}"
    export MTABENCH_AIRFLOW_USER="${MTABENCH_AIRFLOW_USER:-admin}"
    export AIRFLOW_HOME="${MTABENCH_AIRFLOW_HOME:-$MTABENCH_REPO/data/airflow}"
    export AIRFLOW__CORE__DAGS_FOLDER="$MTABENCH_REPO/dags"
    export AIRFLOW__CORE__LOAD_EXAMPLES=False
    export AIRFLOW__CORE__EXECUTOR=LocalExecutor
    export AIRFLOW__CORE__PARALLELISM=4
    export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://127.0.0.1:${MTABENCH_AIRFLOW_PORT}/execution/"
    export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="${MTABENCH_AIRFLOW_USER}:admin"
    export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="$AIRFLOW_HOME/simple_auth_manager_passwords.json"
    export AIRFLOW__API__HOST=127.0.0.1
    export AIRFLOW__API__PORT="$MTABENCH_AIRFLOW_PORT"
    export AIRFLOW__API__BASE_URL="http://127.0.0.1:${MTABENCH_AIRFLOW_PORT}"
    export AIRFLOW__API__WORKERS=1
    export AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK=False
    # a drop reaches the dashboards through ~6 scheduler hand-offs (asset event -> DAG run ->
    # each task): an idle scheduler looks again after 0.5 s, not 1 s (bench/airflow_bench.py)
    export AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME=0.5
    # an unchanged DAG file is parsed again every 5 min, not every 30 s (each parse: ~1 s of a
    # core, beside the build); an edited one is parsed at once (file_parsing_sort_mode
    # modified_time); a dbt model added without a DAG edit shows its sensor within 5 min
    export AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL=300
    # Cosmos renders the dbt project with `dbt ls` (through the data venv) when its cache
    # (an Airflow Variable keyed by the project's files) is cold: ~10-30 s on 2 busy cores
    export AIRFLOW__CORE__DAGBAG_IMPORT_TIMEOUT=180
    export AIRFLOW__DAG_PROCESSOR__DAG_FILE_PROCESSOR_TIMEOUT=240
    export AIRFLOW__COSMOS__ENABLE_TELEMETRY=False
    # the watcher producer's XCom backup: kept in memory, written to a Variable only on failure
    # (Cosmos's default rewrites the whole, growing backup at every push: ~140 per build)
    export AIRFLOW__COSMOS__ENABLE_WATCHER_RELIABLE_RETRY=False
    export AIRFLOW__CORE__ANALYTICS_ENABLED=False
    export SCARF_ANALYTICS=false
    export DBT_SEND_ANONYMOUS_USAGE_STATS=false
    export GX_ANALYTICS_ENABLED=false
    case ":$PATH:" in
        *":$MTABENCH_AIRFLOW_VENV/bin:"*) ;;
        *) export PATH="$MTABENCH_AIRFLOW_VENV/bin:$PATH" ;;
    esac
    if [ -f "$AIRFLOW_HOME/secrets.env" ]; then
        set -a
        # shellcheck disable=SC1091
        . "$AIRFLOW_HOME/secrets.env"
        set +a
    fi
}

_mtabench_airflow_setup() {
    set -euo pipefail
    local py="$MTABENCH_AIRFLOW_VENV/bin/python"
    command -v uv >/dev/null 2>&1 || { echo "airflow_env: uv not found (run scripts/setup.sh)" >&2; exit 1; }
    # --compile-bytecode: .pyc files written once (~8 s), not compiled again by every Airflow
    # process where PYTHONDONTWRITEBYTECODE is set (`airflow dags test`: ~10 s of its start-up
    # on 2 busy cores); a no-op when the venv is in sync
    uv sync --frozen --quiet --compile-bytecode --project "$MTABENCH_REPO/envs/airflow"

    mkdir -p "$AIRFLOW_HOME"
    chmod 700 "$AIRFLOW_HOME"
    umask 077
    if [ ! -s "$AIRFLOW_HOME/secrets.env" ]; then
        "$py" - "$AIRFLOW_HOME/secrets.env" <<'PY'
import base64, os, secrets, sys
with open(sys.argv[1], "w") as f:
    f.write("# generated by scripts/airflow_env.sh; never commit\n")
    f.write(f"AIRFLOW__CORE__FERNET_KEY={base64.urlsafe_b64encode(os.urandom(32)).decode()}\n")
    f.write(f"AIRFLOW__API__SECRET_KEY={secrets.token_urlsafe(32)}\n")
    f.write(f"AIRFLOW__API_AUTH__JWT_SECRET={secrets.token_urlsafe(48)}\n")
PY
        echo "airflow_env: generated secrets in $AIRFLOW_HOME/secrets.env"
    fi
    _mtabench_airflow_export

    # SimpleAuthManager: users from [core] simple_auth_manager_users, passwords from this JSON file
    "$py" - "$AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE" "$MTABENCH_AIRFLOW_USER" <<'PY'
import json, os, secrets, sys
path, user = sys.argv[1], sys.argv[2]
try:
    with open(path) as f:
        pw = json.loads(f.read().strip() or "{}")
except FileNotFoundError:
    pw = {}
want = os.environ.get("MTABENCH_AIRFLOW_PASSWORD")
if want and pw.get(user) != want:
    pw[user] = want
elif not want and user not in pw:
    pw[user] = secrets.token_urlsafe(18)
    print(f"airflow_env: generated a password for {user!r} in {path}")
else:
    sys.exit(0)
with open(path, "w") as f:
    f.write(json.dumps(pw) + "\n")
PY
    umask 022

    # metadata DB + pool: once per (lock file, this script) version
    local stamp="$AIRFLOW_HOME/.setup-stamp" want
    want="$(cat "$MTABENCH_REPO/envs/airflow/uv.lock" "${BASH_SOURCE[0]}" | sha256sum | cut -c1-16)"
    if [ ! -f "$AIRFLOW_HOME/airflow.db" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "airflow_env: airflow db migrate ($AIRFLOW_HOME)"
        airflow db migrate >"$AIRFLOW_HOME/db-migrate.log" 2>&1 \
            || { tail -30 "$AIRFLOW_HOME/db-migrate.log" >&2; exit 1; }
        airflow pools set mtabench_duckdb 1 "DuckDB writers: one task at a time" >/dev/null
        echo "$want" >"$stamp"
    fi
}

_mtabench_airflow_export
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    _mtabench_airflow_setup
    if [ $# -gt 0 ]; then
        exec "$@"
    fi
fi
