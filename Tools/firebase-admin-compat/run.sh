#!/usr/bin/env bash
# Compatibility check with the real Python firebase-admin SDK, used as against the Firebase
# emulator: builds canopy-server, starts it in memory on a free port, runs compat_test.py with
# FIREBASE_DATABASE_EMULATOR_HOST pointing at it, and stops the server on exit.
#
#   Tools/firebase-admin-compat/run.sh [CHECK_NAME ...]
#
# Environment: COMPAT_VENV (default .build/compat-venv), FIREBASE_ADMIN_SPEC (default
# firebase-admin), COMPAT_SKIP_BUILD=1 to use the existing .build/debug/canopy-server.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$root"

summary_failed() {
    echo "firebase-admin compat: 0 passed, 1 failed"
    exit 1
}

# 1. The server binary (the default build directory, so CI reuses its test build).
server="$root/.build/debug/canopy-server"
if [ "${COMPAT_SKIP_BUILD:-0}" != 1 ] || [ ! -x "$server" ]; then
    echo "compat: swift build --product canopy-server"
    swift build --product canopy-server || { echo "compat: build failed"; summary_failed; }
fi

# 2. A virtualenv with firebase-admin (kept between runs; rebuilt if broken).
venv="${COMPAT_VENV:-$root/.build/compat-venv}"
if ! "$venv/bin/python" -c 'import firebase_admin' >/dev/null 2>&1; then
    echo "compat: creating $venv with ${FIREBASE_ADMIN_SPEC:-firebase-admin}"
    rm -rf "$venv"
    python3 -m venv "$venv" || { echo "compat: python3 -m venv failed (install python3-venv)"; summary_failed; }
    "$venv/bin/pip" install --quiet --disable-pip-version-check "${FIREBASE_ADMIN_SPEC:-firebase-admin}" \
        || { echo "compat: pip install firebase-admin failed"; summary_failed; }
fi
echo "compat: $("$venv/bin/python" -c 'import firebase_admin; print("firebase-admin", firebase_admin.__version__)')"

# 3. The server, on a free port, stopped on exit whatever happens.
work="$(mktemp -d)"
server_pid=""
test_pid=""
cleanup() {
    if [ -n "$test_pid" ]; then kill "$test_pid" 2>/dev/null || true; fi
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

port="$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
"$server" --host 127.0.0.1 --port "$port" --in-memory --emulator --sse-keepalive-interval 1 --log-level warning \
    >"$work/server.log" 2>&1 &
server_pid=$!

ready=0
for _ in $(seq 1 100); do
    if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
    if "$venv/bin/python" - "$port" <<'EOF' 2>/dev/null; then ready=1; break; fi
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=1).read()
EOF
    sleep 0.1
done
if [ "$ready" != 1 ]; then
    echo "compat: canopy-server did not answer /health on port $port"
    cat "$work/server.log"
    summary_failed
fi
echo "compat: canopy-server on 127.0.0.1:$port (pid $server_pid)"

# 4. The checks. compat_test.py prints the closing summary line itself. (In the background so
# that an interrupt stops it and the server at once.)
status=0
FIREBASE_DATABASE_EMULATOR_HOST="127.0.0.1:$port" PYTHONUNBUFFERED=1 \
    timeout 600 "$venv/bin/python" "$here/compat_test.py" "$@" </dev/null &
test_pid=$!
wait "$test_pid" || status=$?
test_pid=""
if [ "$status" != 0 ]; then
    echo "compat: server log (last 50 lines):"
    tail -n 50 "$work/server.log"
    if [ "$status" = 124 ]; then
        echo "compat: compat_test.py timed out"
        summary_failed
    fi
fi
exit "$status"
