#!/usr/bin/env bash
# Runs every benchmark suite (package-benchmark) and every canopy-load scenario with release builds,
# then writes their figures, the commands behind them, the machine and the ratios to their baselines
# into the generated section of Docs/BENCHMARKS.md (between the bench.sh:begin and bench.sh:end
# markers; the rest of the file is left as it is).
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
    cat <<'EOF'
Usage: bash Tools/bench.sh [--quick] [--out FILE]

  --quick     tiny sizes and a few benchmarks only: a smoke check of the whole pipeline
  --out FILE  the Markdown file whose generated section is replaced (default Docs/BENCHMARKS.md);
              without the markers, the section is appended

Progress goes to standard error; each step's full output is kept in a temporary folder, named
at the start. Needs swift, python3 and redis-server (for fanout's baseline) on PATH.
EOF
}

quick=false
out=Docs/BENCHMARKS.md
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=true ;;
        --out)
            [ $# -ge 2 ] || { usage >&2; exit 64; }
            out=$2
            shift
            ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            echo "bench.sh: unknown argument $1" >&2
            usage >&2
            exit 64
            ;;
    esac
    shift
done

for tool in swift python3 redis-server; do
    command -v "$tool" >/dev/null || { echo "bench.sh: $tool is not on PATH" >&2; exit 69; }
done
[ -f "$out" ] || { echo "bench.sh: $out does not exist" >&2; exit 66; }

started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/canopy-bench.XXXXXX")
log() { printf 'bench.sh [%4ds] %s\n' "$(($(date +%s) - started))" "$*" >&2; }
log "logs and JSON in $work"

# Where the run happened, read at the start (the load average again at the end).
{
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "nproc=$(nproc)"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "memory=$(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo)"
    echo "kernel=$(uname -r)"
    echo "swift=$(swift --version 2>/dev/null | head -n1)"
    # Changes to the output file (an earlier run's tables) do not count as local changes.
    echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- . ":(exclude)$out" 2>/dev/null || echo ' (with local changes)')"
    echo "load_start=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "quick=$quick"
} >"$work/machine.env"

# One release build serves both: the benchmark package depends on the root package, so building
# canopy-server and canopy-load through it reuses the modules the suites compile anyway.
bin=Benchmarks/.build/release
# SwiftPM keeps its build plan (release.yaml) when files are added to the root package, which the
# benchmark package reaches by path: the build then misses the new files. Planning again costs a few
# seconds.
rm -f Benchmarks/.build/release.yaml
for product in canopy-server canopy-load; do
    log "building $product (release, through the benchmark package)"
    swift build -c release --package-path Benchmarks --product "$product" >"$work/build-$product.log" 2>&1 ||
        { tail -n 30 "$work/build-$product.log" >&2; exit 1; }
done

# A free TCP port of 127.0.0.1 for a server the tool starts.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# Benchmark suites: one run per suite, exported as percentiles of every metric (one TSV file each).
if $quick; then
    suites=(
        "QueryResolution|limitToLast\\(50\\) (indexed filter|naive sort) 1k"
        "CacheEviction|evict 2 MB, 10 MB kept"
        "RulesEvaluation|canSet load"
        "ReconnectionFanout|reconnect storm, 1,000 clients"
    )
else
    suites=("QueryResolution|.*" "StoreCommit|.*" "CacheEviction|.*" "RulesEvaluation|.*" "ReconnectionFanout|.*")
fi
for entry in "${suites[@]}"; do
    suite=${entry%%|*}
    filter=${entry#*|}
    mkdir -p "$work/$suite"
    command=(swift package --package-path Benchmarks --allow-writing-to-directory "$work/$suite" benchmark
        --target "$suite" --filter "$filter" --format histogramPercentiles --path "$work/$suite" --no-progress)
    log "suite $suite (filter '$filter')"
    suite_started=$(date +%s)
    "${command[@]}" >"$work/$suite.log" 2>&1 || { tail -n 30 "$work/$suite.log" >&2; exit 1; }
    shown="swift package --package-path Benchmarks benchmark --target $suite"
    [ "$filter" = ".*" ] || shown+=" --filter '$filter'"
    printf '%s\n' "$shown" >"$work/$suite.cmd"
    log "suite $suite done in $(($(date +%s) - suite_started)) s"
done

# canopy-load scenarios, each against a server it starts on a free port (and Redis for fanout).
if $quick; then
    writes_args=(--connections 10 --pipeline 8 --duration 2)
    fanout_args=(--listeners 50 --rate 50 --duration 1)
    saturated_args=(--listeners 50 --rate 500 --duration 1)
    storm_args=(--clients 50 --rounds 1 --timeout 60)
    idle_args=(--connections 50)
    wide_args=(--listeners 200 --rate 20 --duration 1)
    slow_args=(--stalled 20 --streams 5 --duration 3 --baseline-seconds 2)
    flood_args=(--listens 20000)
else
    writes_args=(--connections 100 --pipeline 32 --duration 10)
    fanout_args=(--listeners 1000 --rate 300 --duration 5)
    saturated_args=(--listeners 1000 --rate 1000 --duration 3)
    storm_args=(--clients 10000 --rounds 2 --timeout 120)
    idle_args=(--connections 1000)
    wide_args=(--listeners 10000 --rate 20 --duration 10)
    slow_args=(--duration 20)
    flood_args=()
fi
scenario() {
    local name=$1
    shift
    local port
    port=$(free_port)
    log "canopy-load $name"
    # The command as it reads in the table: the address and the temporary folder are the run's own.
    local shown="canopy-load $* --launch --json"
    printf '%s\n' "${shown//$work/\$TMP}" >"$work/$name.cmd"
    if ! "$bin/canopy-load" "$@" --launch --server "127.0.0.1:$port" --json >"$work/$name.json" 2>"$work/$name.log"; then
        tail -n 20 "$work/$name.log" >&2
        echo "bench.sh: canopy-load $name failed (log: $work/$name.log)" >&2
        exit 1
    fi
    grep -v '^{' "$work/$name.log" | tail -n 3 | sed 's/^/    /' >&2 || true
}
scenario writes writes "${writes_args[@]}" --baseline "$work/grdb-baseline"
scenario fanout fanout "${fanout_args[@]}" --in-memory --baseline redis
scenario fanout-saturated fanout "${saturated_args[@]}" --in-memory --baseline redis
scenario fanout-wide fanout "${wide_args[@]}" --in-memory --baseline redis
scenario storm-cut storm "${storm_args[@]}" --cut
scenario storm-restart storm "${storm_args[@]}" --restart kill
scenario idle idle "${idle_args[@]}" --in-memory
scenario slow-readers slow-readers "${slow_args[@]}"
scenario listen-flood listen-flood "${flood_args[@]}"

echo "load_end=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$work/machine.env"
echo "seconds=$(($(date +%s) - started))" >>"$work/machine.env"
log "writing the tables into $out"
python3 Tools/bench-tables.py "$work" "$out"
log "done in $(($(date +%s) - started)) s; logs and JSON stay in $work"
