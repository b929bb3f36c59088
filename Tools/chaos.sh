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
duration=600
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    duration="$1"
    shift
fi
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
# shellcheck source=Tools/private-postgres.sh
source Tools/private-postgres.sh
cleanup() {
    stop_private_postgres
    rm -rf "$work"
}
trap cleanup EXIT

store="${STORE:-}"
if [ -z "$store" ]; then
    start_private_postgres "$work"
    store="$PRIVATE_POSTGRES_URL"
fi

seed_given=false
for argument in "$@"; do
    case "$argument" in --seed | --seed=*) seed_given=true ;; esac
done
seed_options=()
if ! $seed_given; then
    seed_options=(--seed "$((RANDOM * 32768 + RANDOM))")
    log "seed ${seed_options[1]} (give --seed ${seed_options[1]} to replay this run's faults)"
fi
log "$(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg); faults for $duration s"
"$bin/canopy-load" chaos --store "$store" --server-binary "$bin/canopy-server" --duration "$duration" \
    "${seed_options[@]}" "$@"
