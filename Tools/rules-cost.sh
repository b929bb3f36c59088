#!/usr/bin/env bash
# What a rules document costs the server per write at full load: `canopy-load writes` against
# canopy-server without rules (nothing is evaluated), then with RULES (each write is checked),
# alternating for ROUNDS rounds on the same machine; prints acknowledged writes/s and server CPU
# per write for each run, then the medians and their ratio. A shared machine's CPU per write drifts
# by 10-15 % from run to run, so one pair of runs decides nothing; the median of alternating runs
# does. Then, where perf is installed, one more run with rules samples the server and prints the
# share of its CPU spent checking writes (Database.maySet, RulesDocument.canSet and below).
#
#   Tools/rules-cost.sh [SECONDS] [RULES_FILE] [ROUNDS]
#       (defaults: 10, Benchmarks/Rules/fifty-rules.json, 3)
#
# Release builds first: swift build -c release --scratch-path .build-release --product canopy-server
# (and --product canopy-load); B=DIR names another build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${B:-.build-release/release}"
duration="${1:-10}"
rules="${2:-Benchmarks/Rules/fifty-rules.json}"
rounds="${3:-3}"
ticks="$(getconf CLK_TCK)"

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# run LABEL [SERVER ARGUMENTS...]: prints "LABEL WRITES_PER_S CPU_US_PER_WRITE". With $profile set to
# a file, the server is also sampled by perf for the middle of the run, into that file.
profile=""
run() {
    local label="$1"
    shift
    local data port server before after output rate total load
    data="$(mktemp -d)"
    port="$(free_port)"
    "$bin/canopy-server" --port "$port" --data "$data" --log-level error "$@" &
    server=$!
    for _ in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
        sleep 0.1
    done
    before="$(cpu_ticks "$server")"
    output="$(mktemp)"
    "$bin/canopy-load" writes --server "127.0.0.1:$port" --connections 50 --pipeline 32 \
        --duration "$duration" >"$output" 2>&1 &
    load=$!
    if [ -n "$profile" ]; then
        sleep 2
        perf record -q -g -p "$server" -o "$profile" -- sleep "$((duration - 4))" >/dev/null 2>&1 || true
    fi
    wait "$load" || true
    after="$(cpu_ticks "$server")"
    output="$(cat "$output"; rm -f "$output")"
    kill "$server"
    wait "$server" 2>/dev/null || true
    rm -rf "$data"
    total="$(sed -n 's/^acked writes: \([0-9]*\) in.*/\1/p' <<<"$output")"
    rate="$(sed -n 's/.*= \([0-9]*\) writes\/s.*/\1/p' <<<"$output")"
    if [ -z "$total" ] || [ "$total" = 0 ]; then
        echo "rules-cost: no writes measured for $label:" >&2
        echo "$output" >&2
        exit 1
    fi
    awk -v l="$label" -v r="$rate" -v t="$((after - before))" -v h="$ticks" -v n="$total" \
        'BEGIN { printf "%s %d %.2f\n", l, r, t * 1000000 / h / n }'
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "rules-cost: $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg), ${duration} s per run, $rounds rounds" >&2
results=""
for round in $(seq 1 "$rounds"); do
    without="$(run "no-rules")"
    with="$(run "rules" --rules "$rules")"
    echo "round $round: $without; $with"
    results+="$without"$'\n'"$with"$'\n'
done
cpu_without="$(awk '$1 == "no-rules" { print $3 }' <<<"$results" | median)"
cpu_with="$(awk '$1 == "rules" { print $3 }' <<<"$results" | median)"
awk -v a="$cpu_without" -v b="$cpu_with" -v n="$rounds" \
    'BEGIN { printf "rules cost: %.1f%% more server CPU per write (medians of %d runs: %.2f -> %.2f us)\n", (b - a) * 100 / a, n, a, b }'

# The server's CPU per write also grows as its throughput falls (smaller commits, fewer frames
# per read), so the comparison above overstates the check. Sampling the server while it checks
# every write measures the check itself: the share of samples in Database.maySet (which the
# compiler may inline into its caller) or RulesDocument.canSet, and below.
if command -v perf >/dev/null && [ "$duration" -ge 6 ]; then
    profile="$(mktemp)"
    echo "profile: $(run "rules" --rules "$rules")"
    perf script -i "$profile" -F ip,sym 2>/dev/null | awk '
        /^$/ { if (inside) { total++; if (check) checked++ }; inside = 0; check = 0; next }
        { inside = 1; if ($0 ~ /maySet|5Rules0A8DocumentV6canSet/) check = 1 }
        END {
            if (inside) { total++; if (check) checked++ }
            if (total == 0) { print "rules check: perf recorded no samples"; exit }
            printf "rules check: %.1f%% of the server'"'"'s CPU at full load (%d of %d perf samples in Database.maySet or RulesDocument.canSet)\n", checked * 100 / total, checked, total
        }'
    rm -f "$profile"
else
    echo "rules check: not sampled (needs perf and SECONDS >= 6)"
fi
echo "rules-cost: load average $(cut -d' ' -f1 /proc/loadavg) at the end" >&2
