#!/usr/bin/env python3
"""Turns what Tools/bench.sh collected into the Markdown tables of its section of a file.

Usage: bench-tables.py WORK_FOLDER FILE

WORK_FOLDER holds machine.env, one folder per benchmark suite with package-benchmark's
`histogramPercentiles` export, and one JSON file per canopy-load scenario, each with a `.cmd` file
holding the command that produced it. The section between the bench.sh:begin and bench.sh:end
markers of FILE is replaced (appended when the markers are missing); the rest of FILE is kept.
"""

import glob
import json
import os
import re
import sys

BEGIN = "<!-- bench.sh:begin -->"
END = "<!-- bench.sh:end -->"

TIME_UNITS = {"ns": 1, "μs": 1e3, "us": 1e3, "ms": 1e6, "s": 1e9, "ks": 1e12, "Ms": 1e15}
COUNT_UNITS = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


def read_env(path):
    values = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            key, _, value = line.rstrip("\n").partition("=")
            values[key] = value
    return values


def read_command(work, name):
    path = os.path.join(work, name + ".cmd")
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as handle:
        return handle.read().strip()


def load_suite(work, target):
    """{benchmark name: {metric: {percentile: value in ns or as a count}}} for one suite."""
    pattern = re.compile(r"^(.+?)\." + re.escape(target) + r"\.(.+)\.([^.]+)\.histogram\.percentiles\.tsv$")
    results = {}
    for path in glob.glob(os.path.join(work, target, "*.histogram.percentiles.tsv")):
        match = pattern.match(os.path.basename(path))
        if not match:
            continue
        name = match.group(2).replace("_", " ")
        metric = match.group(3).replace("_", " ")
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
        factor = unit_factor(lines[0].split("\t", 1)[1])
        values = {}
        for line in lines[1:]:
            if "\t" in line:
                percentile, value = line.split("\t", 1)
                values[int(percentile)] = float(value) * factor
        results.setdefault(name, {})[metric] = values
    return results


def unit_factor(header):
    """What a value under `header` (`Time (wall clock) (μs) *`, `Malloc (total) (K) *`) is worth
    in nanoseconds or in ones."""
    header = header.rstrip(" *")
    match = re.search(r"\(([^()]*)\)$", header)
    if match:
        unit = match.group(1)
        if unit in TIME_UNITS:
            return TIME_UNITS[unit]
        if unit in COUNT_UNITS:
            return COUNT_UNITS[unit]
    return 1


def p50(results, name, metric):
    return results.get(name, {}).get(metric, {}).get(50)


def duration(nanoseconds):
    if nanoseconds is None:
        return "—"
    for unit, size in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if nanoseconds >= size:
            return significant(nanoseconds / size) + " " + unit
    return significant(nanoseconds) + " ns"


def significant(value):
    """Three significant digits at most, thousands grouped: 1,843 / 84.1 / 8.12 (84, not 84.0)."""
    if value >= 100:
        return f"{value:,.0f}"
    text = f"{value:.1f}" if value >= 10 else f"{value:.2f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def count(value):
    return "—" if value is None else f"{value:,.0f}"


def ratio(value):
    if value is None:
        return "—"
    if value >= 100:
        return f"{value:,.0f}×"
    if value >= 10:
        return f"{value:.1f}×"
    return f"{value:.2f}×"


def divide(numerator, denominator):
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def query_resolution(work):
    results = load_suite(work, "QueryResolution")
    if not results:
        return []

    def baseline(name):
        match = re.match(r"limitToLast\(50\) (indexed filter|index walk) (\w+)$", name)
        if match:
            return f"limitToLast(50) naive sort {match.group(2)}", "naive sort"
        match = re.match(r"updatingChild (\w+) ", name)
        if match:
            return f"Dictionary copy+update {match.group(1)}", "copy + update of a dictionary"
        if name.startswith("Node.update in place"):
            return name.replace("Node.update in place", "Node.updating"), "persistent update"
        return None, None

    rows = [
        "| Benchmark | p50 wall time | Mallocs per op (p50) | Baseline | Baseline p50 ÷ this p50 |",
        "|---|---:|---:|---|---:|",
    ]
    for name in sorted(results, key=order_key):
        wall = p50(results, name, "wallClock")
        other, label = baseline(name)
        rows.append(
            f"| {name} | {duration(wall)} | {count(p50(results, name, 'mallocCountTotal'))} | {label or '—'} | "
            f"{ratio(divide(p50(results, other, 'wallClock'), wall)) if other in results else '—'} |"
        )
    return section("Query resolution", read_command(work, "QueryResolution"), rows, [
        "Times are per operation (the µs-scale benchmarks run 1,000 operations per sample). The ratio is "
        "the baseline's p50 over the benchmark's, in the same run: how many times faster than its "
        "baseline (the naive sort for the query, a full copy for an update).",
    ])


def store_commit(work):
    results = load_suite(work, "StoreCommit")
    if not results:
        return []
    rows = [
        "| Benchmark | p50 wall time | p50 per write | Mallocs (p50) |",
        "|---|---:|---:|---:|",
    ]
    for name in sorted(results, key=order_key):
        wall = p50(results, name, "wallClock")
        writes = re.search(r"of (\d+) ", name)
        rows.append(
            f"| {name} | {duration(wall)} | {duration(divide(wall, int(writes.group(1)) if writes else None))} | "
            f"{count(p50(results, name, 'mallocCountTotal'))} |"
        )
    return section("Store commit", read_command(work, "StoreCommit"), rows, [
        "The commit thread's work for a group commit of one-leaf writes that replace rows, in one "
        "SQLite transaction without fsync (durability `.normal`): its CPU, not the disk's.",
    ])


def cache_eviction(work):
    results = load_suite(work, "CacheEviction")
    if not results:
        return []
    rows = [
        "| Benchmark | p50 wall time | Mallocs (p50) | p50 ÷ the same at 10 MB |",
        "|---|---:|---:|---:|",
    ]
    for name in sorted(results, key=order_key):
        wall = p50(results, name, "wallClock")
        small = name.replace("100 MB", "10 MB")
        relative = divide(wall, p50(results, small, "wallClock")) if small != name else None
        rows.append(
            f"| {name} | {duration(wall)} | {count(p50(results, name, 'mallocCountTotal'))} | {ratio(relative)} |"
        )
    return section("Cache eviction", read_command(work, "CacheEviction"), rows, [
        "The baseline is the same work with a tenth of the data kept: neither should grow with the cache.",
    ])


def rules_evaluation(work):
    results = load_suite(work, "RulesEvaluation")
    if not results:
        return []
    rows = [
        "| Check | p50 wall time | Mallocs per check (p50) | Open rules p50 | This p50 − open rules p50 |",
        "|---|---:|---:|---:|---:|",
    ]
    for name in sorted(results, key=order_key):
        if not name.endswith(", 50 rules"):
            continue
        wall = p50(results, name, "wallClock")
        other = name.replace(", 50 rules", ", open rules (baseline)")
        open_wall = p50(results, other, "wallClock")
        extra = None if wall is None or open_wall is None else wall - open_wall
        rows.append(
            f"| {name.replace(', 50 rules', '')} | {duration(wall)} | "
            f"{count(p50(results, name, 'mallocCountTotal'))} | {duration(open_wall)} | {duration(extra)} |"
        )
    return section("Rules evaluation", read_command(work, "RulesEvaluation"), rows, [
        "Per check, against the 50-rule document of `Benchmarks/Rules/fifty-rules.json`; the baseline "
        "is the allow-everything document, in the same run. `Tools/rules-cost.sh` measures the same "
        "document against a whole server at full load.",
    ])


def reconnection_fanout(work):
    results = load_suite(work, "ReconnectionFanout")
    if not results:
        return []
    rows = [
        "| Storm | p50 wall time | p50 CPU | CPU per restored client | Mallocs per restored client | "
        "Mallocs (p50) | per-client CPU ÷ the same at 1,000 |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    smallest = None
    for name in sorted(results, key=order_key):
        per_client = p50(results, name, "CPU µs per restored client")
        if smallest is None:
            smallest = per_client
        rows.append(
            f"| {name} | {duration(p50(results, name, 'wallClock'))} | {duration(p50(results, name, 'cpuTotal'))} | "
            f"{duration(per_client * 1e3) if per_client is not None else '—'} | "
            f"{count(p50(results, name, 'mallocs per restored client'))} | "
            f"{count(p50(results, name, 'mallocCountTotal'))} | {ratio(divide(per_client, smallest))} |"
        )
    return section("Reconnection storm in one process", read_command(work, "ReconnectionFanout"), rows, [
        "From the cut to every client's two listens answered on its new connection and the server "
        "counting only the new connections. CPU and allocations are the server's (its process; the "
        "clients run in one of their own). There is no outside baseline: the last column compares "
        "each storm's cost per client with the smallest storm's, which stays near 1× when a storm "
        "costs O(N).",
    ])


def load_scenarios(work):
    rows = [
        "| Scenario | Figure | Baseline | Ratio | Command |",
        "|---|---|---|---:|---|",
    ]
    writes = read_json(work, "writes")
    if writes:
        canopy = writes["canopy"]
        figure = (
            f"{canopy['writesPerSecond']:,.0f} acked writes/s, p50 ack {fmt_seconds_ms(canopy['ackLatency']['p50Ms'])}, "
            f"p99 {fmt_seconds_ms(canopy['ackLatency']['p99Ms'])}"
        )
        if canopy.get("serverCPUMicrosecondsPerWrite") is not None:
            figure += f", server CPU {canopy['serverCPUMicrosecondsPerWrite']:.1f} µs per write"
        baselines = writes["baseline"]
        other = "; ".join(
            f"{baseline['rowsPerTransaction']:,} per transaction: {baseline['upsertsPerSecond']:,.0f}/s"
            for baseline in baselines
        )
        ratios = " / ".join(ratio(baseline["ratio"]) for baseline in baselines)
        rows.append(
            f"| writes | {figure} | {'raw GRDB upserts, fsync per commit, ' + other if baselines else '—'} | "
            f"{ratios or '—'} | `{read_command(work, 'writes')}` |"
        )
    for name in ("fanout", "fanout-saturated", "fanout-wide"):
        fanout = read_json(work, name)
        if not fanout:
            continue
        canopy = fanout["canopy"]
        redis = fanout.get("redis")
        figure = (
            f"{canopy['eventsPerSecond']:,.0f} events/s to {fanout['listeners']:,} listeners at "
            f"{fanout['rate']:,} writes/s, p50 {fmt_seconds_ms(canopy['latency']['p50Ms'])}, "
            f"p99 {fmt_seconds_ms(canopy['latency']['p99Ms'])}"
        )
        other = "—"
        if redis:
            other = (
                f"Redis pub/sub: {redis['eventsPerSecond']:,.0f} events/s, "
                f"p50 {fmt_seconds_ms(redis['latency']['p50Ms'])}, p99 {fmt_seconds_ms(redis['latency']['p99Ms'])}"
            )
        relative = fanout.get("ratio") or {}
        shown = "—"
        if relative:
            shown = (
                f"{ratio(relative.get('eventsPerSecond'))} events/s, {ratio(relative.get('p50Latency'))} "
                f"p50 latency, {ratio(relative.get('p99Latency'))} p99"
            )
        rows.append(f"| {name} | {figure} | {other} | {shown} | `{read_command(work, name)}` |")
    for name in ("storm-cut", "storm-restart"):
        storm = read_json(work, name)
        if not storm:
            continue
        for round_ in storm["rounds"]:
            back = round_.get("backTime") or {}
            figure = (
                f"round {round_['round']}: {round_['back']:,} of {round_['clients']:,} back, last at "
                f"{fmt_seconds(round_.get('lastBackSeconds'))}, p50 {fmt_seconds_ms(back.get('p50Ms'))}"
            )
            if round_.get("serverCPUMicrosecondsPerClient") is not None:
                figure += f", server CPU {round_['serverCPUMicrosecondsPerClient']:,.0f} µs per client"
            rows.append(f"| {name} ({storm['mode']}) | {figure} | — | — | `{read_command(work, name)}` |")
    idle = read_json(work, "idle")
    if idle:
        figure = (
            f"{idle['bytesPerConnection'] / 1024:.1f} KB of server memory per idle connection "
            f"({idle['connections']:,} connections)"
        )
        rows.append(f"| idle | {figure} | — | — | `{read_command(work, 'idle')}` |")
    slow = read_json(work, "slow-readers")
    if slow:
        figure = (
            f"{slow['stalled']:,} stalled connections and {slow['streams']:,} stalled event streams for "
            f"{slow['duration']:g} s: server RSS peak {slow['serverPeakRSSBytes'] / 1e6:,.0f} MB "
            f"(under 1 GB: {'yes' if slow['peakUnder1GB'] else 'no'}); closed "
            f"{slow['realtimeReadersClosed']:,} connections and {slow['streamsClosed']:,} streams; healthy "
            f"writes p99 {fmt_seconds_ms(slow['stalledLatency']['p99Ms'])} during the stall"
        )
        other = f"the same writes unloaded: p99 {fmt_seconds_ms(slow['unloaded']['p99Ms'])}"
        rows.append(
            f"| slow-readers | {figure} | {other} | {ratio(slow['p99Ratio'])} p99 | "
            f"`{read_command(work, 'slow-readers')}` |"
        )
    flood = read_json(work, "listen-flood")
    if flood:
        figure = (
            f"{flood['listens']:,} listens on one connection: {flood['ok']:,} ok, {flood['refused']:,} refused "
            f"in {fmt_seconds(flood['floodSeconds'])} (cap held: {'yes' if flood['capHeld'] else 'no'}); server "
            f"RSS {flood['serverRSSBeforeBytes'] / 1e6:,.0f} → {flood['serverPeakRSSBytes'] / 1e6:,.0f} MB; "
            f"other clients' p99 during it: write {fmt_seconds_ms(flood['write']['during']['p99Ms'])}, "
            f"read {fmt_seconds_ms(flood['read']['during']['p99Ms'])}"
        )
        other = (
            f"before it: write p99 {fmt_seconds_ms(flood['write']['before']['p99Ms'])}, "
            f"read p99 {fmt_seconds_ms(flood['read']['before']['p99Ms'])}"
        )
        rows.append(
            f"| listen-flood | {figure} | {other} | write {ratio(flood['writeP99Ratio'])}, read "
            f"{ratio(flood['readP99Ratio'])} p99 | `{read_command(work, 'listen-flood')}` |"
        )
    if len(rows) == 2:
        return []
    return section("canopy-load", None, rows, [
        "Each scenario starts its own release `canopy-server` on a free port of 127.0.0.1 (`--launch`; "
        "`writes` and `storm` with their data in a temporary folder, fsync on; `$TMP` is the run's "
        "temporary folder). The ratio is Canopy's figure over the baseline's, in the same run: for "
        "`writes`, at the server's own average transaction size, then at connections × pipeline rows. "
        "`fanout` offers a load both sides deliver (its events/s ratio is then 1, and latency tells "
        "them apart); `fanout-saturated` offers more than Canopy delivers here; `fanout-wide` is the "
        "overload issue's 200,000 events/s to 10,000 listeners. `slow-readers` and `listen-flood` "
        "compare other clients' latency while the overload lasts with the same clients' before it.",
    ])


def read_json(work, name):
    path = os.path.join(work, name + ".json")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def fmt_seconds(seconds):
    return "—" if seconds is None else duration(seconds * 1e9)


def fmt_seconds_ms(milliseconds):
    return "—" if milliseconds is None else duration(milliseconds * 1e6)


def order_key(name):
    """Benchmarks in the order a reader expects: by name, with sizes in numeric order."""
    def size(match):
        number = float(match.group(1).replace(",", ""))
        scale = {"k": 1e3, "K": 1e3, "M": 1e6}.get(match.group(2), 1)
        return f"{number * scale:015.0f}"
    return re.sub(r"(\d[\d,]*)(k|K|M)?(?=\b| )", size, name)


def section(title, command, rows, notes):
    lines = [f"#### {title}", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += rows + [""] + notes + [""]
    return lines


def render(work):
    machine = read_env(os.path.join(work, "machine.env"))
    minutes, seconds = divmod(int(machine.get("seconds", "0")), 60)
    lines = [
        BEGIN,
        "<!-- Written by Tools/bench.sh: run it again rather than editing this part. -->",
        "",
        "### Figures from `Tools/bench.sh`" + (" (--quick: tiny sizes, a smoke check only)" if machine.get("quick") == "true" else ""),
        "",
        f"Run on {machine.get('date', '?')} at commit `{machine.get('commit', '?')}`, release builds, in "
        f"{minutes} min {seconds} s. Machine: `nproc` = {machine.get('nproc', '?')}, {machine.get('cpu', '?')}, "
        f"{machine.get('memory', '?')}, Linux {machine.get('kernel', '?')}, {machine.get('swift', '?')}. "
        f"Load average (1, 5, 15 min) {machine.get('load_start', '?')} at the start and "
        f"{machine.get('load_end', '?')} at the end. Times on a shared machine are noisy: compare the "
        "ratios, which come from the same run.",
        "",
    ]
    for part in (query_resolution, store_commit, cache_eviction, rules_evaluation, reconnection_fanout, load_scenarios):
        lines += part(work)
    lines.append(END)
    return "\n".join(lines) + "\n"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    work, target = sys.argv[1], sys.argv[2]
    generated = render(work)
    with open(target, encoding="utf-8") as handle:
        text = handle.read()
    start, end = text.find(BEGIN), text.find(END)
    if start != -1 and end > start:
        rest = text[end + len(END):].lstrip("\n")
        text = text[:start] + generated + ("\n" + rest if rest else "")
    else:
        text = text.rstrip("\n") + "\n\n" + generated
    with open(target, "w", encoding="utf-8") as handle:
        handle.write(text)


if __name__ == "__main__":
    main()
