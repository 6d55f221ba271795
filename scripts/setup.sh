#!/usr/bin/env bash
# One-time (idempotent) set-up on a fresh Debian machine: uv, the locked Python
# environment, the Debian tools the tests compare against (pflogsumm, ministat), and a
# Java 17 runtime for the Spark engine (pyspark 4 needs Java >= 17).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v uv >/dev/null 2>&1; then
    echo "setup: installing uv from PyPI"
    python3 -m pip install --quiet "uv==0.13.9"
fi

need=()
for pkg in pflogsumm ministat; do
    dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "setup: apt-get install ${need[*]}"
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else
        echo "setup: warning: ${need[*]} missing and apt-get unavailable (tests comparing against them will fail)" >&2
    fi
fi

# --compile-bytecode: .pyc files written once at install, so no run compiles pyarrow & co.
# from source (which every run does where PYTHONDONTWRITEBYTECODE is set; ~0.2 CPU s each)
uv sync --frozen --quiet --compile-bytecode
# and the project's own modules (an editable install, so not compiled by uv): every command
# imports ~100 of them, ~0.07 CPU s to compile where no .pyc may be written
uv run --frozen --quiet python -m compileall -q -j 0 ingest mtabench expectations >/dev/null
