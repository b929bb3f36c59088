#!/usr/bin/env bash
# Compatibility check with the real Python firebase-admin SDK, used as against the Firebase
# emulator: builds canopy-server, starts it in memory on a free port, runs compat_test.py with
# FIREBASE_DATABASE_EMULATOR_HOST pointing at it, and stops the server on exit.
#
#   Tools/firebase-admin-compat/run.sh [CHECK_NAME ...]
#
# Environment: COMPAT_VENV (default .build/compat-venv), FIREBASE_ADMIN_SPEC (default
# firebase-admin), COMPAT_SKIP_BUILD=1 to use the existing .build/debug/canopy-server,
# COMPAT_CLUSTER=1 to run the checks against a cluster: two servers over a private PostgreSQL
# (Tools/private-postgres.sh), the checks sent to the one that does not serve their namespace;
# COMPAT_README=1 to run them against the server the README starts: canopy-server with no options
# (no --emulator), in a fresh folder, only its port chosen (CANOPY_PORT); COMPAT_TLS=1 to run
# tls_test.py instead, firebase-admin in production mode against canopy-server serving TLS itself
# (a private CA and a certificate for localhost made with openssl, REQUESTS_CA_BUNDLE, --admin-secret).
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

# 3. The server, on a free port, stopped on exit whatever happens. With COMPAT_CLUSTER=1: two
# servers over a private PostgreSQL; the first serves the namespace the checks use and the checks
# go to the second, so that every request reaches the owner through another process (REST
# redirects, and proxying for requests with credentials).
work="$(mktemp -d)"
server_pids=()
test_pid=""
# shellcheck source=Tools/private-postgres.sh
source "$root/Tools/private-postgres.sh"
cleanup() {
    if [ -n "$test_pid" ]; then kill "$test_pid" 2>/dev/null || true; fi
    for pid in "${server_pids[@]}"; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
            kill -9 "$pid" 2>/dev/null || true
        fi
    done
    stop_private_postgres
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    "$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start_server PORT LOG ARGUMENTS...: starts canopy-server on PORT and waits for its /health. With
# COMPAT_README=1, as the README's first command does: no options, the data in ./canopy-data of an
# empty folder, no CANOPY_ variable but the port.
start_server() {
    local port="$1" log="$2"
    shift 2
    if [ "${COMPAT_README:-0}" = 1 ]; then
        mkdir -p "$work/readme"
        (
            cd "$work/readme"
            for variable in $(compgen -e | grep '^CANOPY_' || true); do unset "$variable"; done
            CANOPY_PORT="$port" exec "$server"
        ) >"$log" 2>&1 &
    elif [ "${COMPAT_TLS:-0}" = 1 ]; then
        CANOPY_ADMIN_SECRET="$tls_secret" "$server" --host 127.0.0.1 --port "$port" --in-memory \
            --tls-cert-file "$work/tls/server.pem" --tls-key-file "$work/tls/server.key" \
            --sse-keepalive-interval 1 --log-level warning "$@" >"$log" 2>&1 &
    else
        "$server" --host 127.0.0.1 --port "$port" --emulator --sse-keepalive-interval 1 --log-level warning "$@" \
            >"$log" 2>&1 &
    fi
    local pid=$!
    server_pids+=("$pid")
    local ready=0
    for _ in $(seq 1 100); do
        if ! kill -0 "$pid" 2>/dev/null; then break; fi
        if "$venv/bin/python" -c "import ssl, urllib.request; urllib.request.urlopen('$health_scheme://127.0.0.1:$port/health', timeout=1, context=ssl.create_default_context(cafile='$health_ca' or None)).read()" 2>/dev/null; then
            ready=1
            break
        fi
        sleep 0.1
    done
    if [ "$ready" != 1 ]; then
        echo "compat: canopy-server did not answer /health on port $port"
        cat "$log"
        summary_failed
    fi
    echo "compat: canopy-server on 127.0.0.1:$port (pid $pid)"
}

port="$(free_port)"
server_log="$work/server.log"
health_scheme=http
health_ca=""
if [ "${COMPAT_TLS:-0}" = 1 ]; then
    # A private CA and a certificate it signed for localhost and 127.0.0.1, as an operator's own
    # PKI would make them.
    mkdir -p "$work/tls"
    (
        cd "$work/tls"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=Compat CA" \
            -keyout ca.key -out ca.pem
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
            -keyout server.key -out server.csr
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -extfile server.ext \
            -out server.pem
    ) >"$work/tls/openssl.log" 2>&1 || { cat "$work/tls/openssl.log"; echo "compat: openssl failed"; summary_failed; }
    tls_secret="$("$venv/bin/python" -c 'import secrets; print(secrets.token_urlsafe(32))')"
    health_scheme=https
    health_ca="$work/tls/ca.pem"
fi
if [ "${COMPAT_CLUSTER:-0}" = 1 ]; then
    mkdir -p "$work/postgres" "$work/node1" "$work/node2"
    chmod 711 "$work" # PostgreSQL runs as its own user, which must reach its folder inside.
    start_private_postgres "$work/postgres" || summary_failed
    owner_port="$(free_port)"
    start_server "$owner_port" "$work/node1.log" --data "$work/node1" --store "$PRIVATE_POSTGRES_URL" \
        --node-name compat-node1 --advertise-host "127.0.0.1:$owner_port"
    start_server "$port" "$work/node2.log" --data "$work/node2" --store "$PRIVATE_POSTGRES_URL" \
        --node-name compat-node2 --advertise-host "127.0.0.1:$port"
    # The first process takes the namespace the checks use; the checks then go to the second.
    "$venv/bin/python" -c "
import urllib.request
request = urllib.request.Request('http://127.0.0.1:$owner_port/cluster.json?ns=compat', data=b'true', method='PUT',
                                 headers={'Authorization': 'Bearer owner'})
urllib.request.urlopen(request, timeout=30).read()" || { echo "compat: the first node did not take the namespace"; summary_failed; }
    echo "compat: cluster mode: namespace compat served at 127.0.0.1:$owner_port, the checks sent to 127.0.0.1:$port"
    server_log="$work/node2.log"
elif [ "${COMPAT_README:-0}" = 1 ]; then
    start_server "$port" "$server_log"
    # The server must say that firebase-admin's "Bearer owner" is its admin, and why.
    grep -q "development server: no credential is configured, so 'owner' is the admin" "$server_log" \
        || { echo "compat: the server did not log that 'owner' is its admin"; cat "$server_log"; summary_failed; }
    echo "compat: the README's server (no options, data in $work/readme/canopy-data)"
    # Its event streams get a keep-alive every 30 s (the default), and firebase-admin's listener
    # close() waits for the stream's next bytes (as against Firebase: firebase-admin-python#364).
    export COMPAT_CLOSE_SECONDS=35
elif [ "${COMPAT_TLS:-0}" = 1 ]; then
    start_server "$port" "$server_log"
    echo "compat: canopy-server serving TLS on 127.0.0.1:$port (certificate from a private CA)"
else
    start_server "$port" "$server_log" --in-memory
fi

# 4. The checks. compat_test.py prints the closing summary line itself. (In the background so
# that an interrupt stops it and the server at once.)
status=0
if [ "${COMPAT_TLS:-0}" = 1 ]; then
    CANOPY_COMPAT_URL="https://127.0.0.1:$port" CANOPY_COMPAT_SECRET="$tls_secret" \
        REQUESTS_CA_BUNDLE="$work/tls/ca.pem" PYTHONUNBUFFERED=1 \
        timeout 600 "$venv/bin/python" "$here/tls_test.py" </dev/null &
else
    FIREBASE_DATABASE_EMULATOR_HOST="127.0.0.1:$port" PYTHONUNBUFFERED=1 \
        timeout 600 "$venv/bin/python" "$here/compat_test.py" "$@" </dev/null &
fi
test_pid=$!
wait "$test_pid" || status=$?
test_pid=""
if [ "$status" != 0 ]; then
    echo "compat: server log (last 50 lines):"
    tail -n 50 "$server_log"
    if [ "$status" = 124 ]; then
        echo "compat: compat_test.py timed out"
        summary_failed
    fi
fi
exit "$status"
