#!/usr/bin/env python3
"""Allocation counts of the in-process benchmark suites, against the counts checked in.

    Tools/allocations.py check    # what CI runs: exit 1 when a benchmark's count moved
    Tools/allocations.py update   # rewrite Benchmarks/Thresholds/ from a run, then commit them

Runs the suites that measure Canopy's own code in one process, without sockets or disk
(QueryResolution, RulesEvaluation), with release builds through package-benchmark, measuring only
`mallocCountTotal`, and reads the p90 of each benchmark's allocation count (per measured
iteration: a thousand operations for the microsecond benchmarks) as package-benchmark exports it
(`--format metricP90AbsoluteThresholds`, the files `benchmark thresholds update` writes).

The counts are the same from run to run on one toolchain, so a count more than TOLERANCE above or
below its checked-in value fails `check`: more allocations are a regression to fix (or to accept
knowingly with `update`); fewer are an improvement to record with `update`, so that the next
regression back to the old count is caught. Times are not checked here: they are a machine's, and
Tools/bench.sh reports them.

package-benchmark's own `benchmark thresholds check` would compare the same files, but in 1.38 it
looks them up by the benchmark's raw name while `update` writes them under a name with spaces and
slashes replaced (ordo-one/benchmark issues 301 and 373), so it finds none of ours.
"""

import json
import os
import subprocess
import sys
import tempfile

SUITES = ["QueryResolution", "RulesEvaluation"]
TOLERANCE = 0.01
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
THRESHOLDS = os.path.join(ROOT, "Benchmarks", "Thresholds")
METRIC = "mallocCountTotal"
# swift-package itself has been killed by SIGSEGV in libdispatch here (swiftlang/swift#87033), as
# swift build has in .ci/run: a run killed by a signal runs again, up to three in all. The counts do
# not depend on which run measures them; a run that fails by exiting fails as always.
ATTEMPTS = 3


def say(message):
    print(f"allocations: {message}", file=sys.stderr, flush=True)


def measure(folder):
    """Runs the suites; returns {file name: allocation count} from the files they export."""
    command = ["swift", "package", "--package-path", os.path.join(ROOT, "Benchmarks"),
               "--allow-writing-to-directory", folder, "benchmark"]
    for suite in SUITES:
        command += ["--target", suite]
    command += ["--metric", METRIC, "--format", "metricP90AbsoluteThresholds", "--path", folder, "--no-progress"]
    say("running " + ", ".join(SUITES) + " (release build, allocation counts only)")
    for attempt in range(1, ATTEMPTS + 1):
        result = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if result.returncode >= 0 or attempt == ATTEMPTS:
            break
        say(f"swift package was killed by signal {-result.returncode}; running again (attempt {attempt + 1} of {ATTEMPTS})")
    if result.returncode != 0:
        print(result.stdout, file=sys.stderr)
        sys.exit(f"allocations: the benchmark run failed (exit {result.returncode})")
    return read_counts(folder)


def read_counts(folder):
    if not os.path.isdir(folder):
        sys.exit(f"allocations: {folder} does not exist; record the counts with `Tools/allocations.py update`")
    counts = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".p90.json"):
            continue
        with open(os.path.join(folder, name)) as file:
            figures = json.load(file)
        if METRIC not in figures:
            sys.exit(f"allocations: {name} has no {METRIC}")
        counts[name] = figures[METRIC]
    if not counts:
        sys.exit(f"allocations: no counts in {folder}")
    return counts


def label(name):
    return name.removesuffix(".p90.json")


def check(measured):
    expected = read_counts(THRESHOLDS)
    failures = []
    rows = []
    for name in sorted(set(measured) | set(expected)):
        if name not in expected:
            failures.append(f"{label(name)}: no threshold checked in (measured {measured[name]})")
            continue
        if name not in measured:
            failures.append(f"{label(name)}: a threshold for a benchmark that no longer runs")
            continue
        allowed = expected[name] * TOLERANCE
        change = measured[name] - expected[name]
        verdict = "ok"
        if change > allowed:
            verdict = "MORE"
            failures.append(f"{label(name)}: {measured[name]} allocations, {expected[name]} checked in")
        elif -change > allowed:
            verdict = "fewer"
            failures.append(f"{label(name)}: {measured[name]} allocations, fewer than the {expected[name]} checked in")
        rows.append((label(name), expected[name], measured[name], verdict))
    width = max(len(row[0]) for row in rows) if rows else 10
    print(f"{'benchmark':<{width}}  {'checked in':>10}  {'measured':>10}")
    for name, threshold, count, verdict in rows:
        print(f"{name:<{width}}  {threshold:>10}  {count:>10}  {verdict}")
    if failures:
        print()
        for failure in failures:
            print(f"allocations: {failure}")
        print("allocations: a count moved by more than "
              f"{TOLERANCE:.0%}; fix the change, or record the new counts with "
              "`Tools/allocations.py update` and commit Benchmarks/Thresholds")
        return 1
    print(f"allocations: {len(rows)} benchmarks within {TOLERANCE:.0%} of their checked-in counts")
    return 0


def update(measured):
    os.makedirs(THRESHOLDS, exist_ok=True)
    for name in os.listdir(THRESHOLDS):
        if name.endswith(".p90.json") and name not in measured:
            os.remove(os.path.join(THRESHOLDS, name))
            say(f"removed {name}")
    for name, count in measured.items():
        with open(os.path.join(THRESHOLDS, name), "w") as file:
            json.dump({METRIC: count}, file, indent=2, sort_keys=True)
            file.write("\n")
    say(f"wrote {len(measured)} thresholds to {os.path.relpath(THRESHOLDS, ROOT)}")
    return 0


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ("check", "update"):
        print(__doc__.strip(), file=sys.stderr)
        return 64
    with tempfile.TemporaryDirectory(prefix="canopy-allocations.") as folder:
        measured = measure(folder)
        return check(measured) if sys.argv[1] == "check" else update(measured)


if __name__ == "__main__":
    sys.exit(main())
