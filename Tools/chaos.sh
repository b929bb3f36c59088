#!/usr/bin/env bash
# Random faults on a three-node cluster for as long as asked: `canopy-load chaos` against a private
# PostgreSQL it starts in a temporary folder (initdb, a Unix socket, no TCP port), then stopped and
# removed. Faults (SIGKILL, SIGSTOP past the lease, SIGTERM) hit whichever node serves the namespace;
# the run fails if an acknowledged write is missing at the end or a fault is never recovered from.
#
#   Tools/chaos.sh [SECONDS] [canopy-load chaos options...]
#       SECONDS defaults to 600; the seed is random unless given (--seed N replays a run's faults).
#       STORE=postgres://... uses that database instead of a private cluster.
#       B=DIR uses the release builds in DIR (default: .build-release/release, built when missing).
#
# Needs PostgreSQL 15 or later's server programs (Debian: postgresql); as root, the cluster runs as
# the postgres user.
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${1:-600}"
shift || true
bin="${B:-.build-release/release}"
log() { echo "chaos.sh: $*" >&2; }

for product in canopy-server canopy-load; do
    if [ ! -x "$bin/$product" ]; then
        [ -n "${B:-}" ] && { log "$bin/$product is missing"; exit 1; }
        log "building $product (release) into .build-release"
        swift build -c release --scratch-path .build-release --product "$product" >&2
    fi
done

work="$(mktemp -d /tmp/canopy-chaos.XXXXXX)"
pg_pid=""
cleanup() {
    if [ -n "$pg_pid" ]; then
        kill -INT "$pg_pid" 2>/dev/null || true
        wait "$pg_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

store="${STORE:-}"
if [ -z "$store" ]; then
    pg_bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
    [ -x "$pg_bin/initdb" ] || { log "PostgreSQL's server programs are missing (apt-get install postgresql)"; exit 1; }
    as_postgres=()
    if [ "$(id -u)" = 0 ]; then
        chown postgres "$work"
        as_postgres=(setpriv --reuid=postgres --regid=postgres --init-groups --)
    fi
    "${as_postgres[@]}" "$pg_bin/initdb" -D "$work/data" -A trust -U postgres --no-sync >"$work/initdb.log"
    port=55499
    "${as_postgres[@]}" "$pg_bin/postgres" -D "$work/data" -k "$work" -c listen_addresses= -p "$port" \
        -c fsync=on >"$work/postgres.log" 2>&1 &
    pg_pid=$!
    for _ in $(seq 1 100); do
        "$pg_bin/pg_isready" -q -h "$work" -p "$port" && break
        sleep 0.1
    done
    "$pg_bin/psql" -q -h "$work" -p "$port" -U postgres -c "CREATE DATABASE chaos" >/dev/null
    store="postgres://postgres@localhost:$port/chaos?host=$work"
    log "PostgreSQL $("$pg_bin/postgres" --version | awk '{ print $3 }') in $work (log: postgres.log there)"
fi

seed_given=false
for argument in "$@"; do [ "$argument" = "--seed" ] && seed_given=true; done
seed_options=()
if ! $seed_given; then
    seed_options=(--seed "$((RANDOM * 32768 + RANDOM))")
    log "seed ${seed_options[1]} (give --seed ${seed_options[1]} to replay this run's faults)"
fi
log "$(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg); faults for $duration s"
"$bin/canopy-load" chaos --store "$store" --server-binary "$bin/canopy-server" --duration "$duration" \
    "${seed_options[@]}" "$@"
