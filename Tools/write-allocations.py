#!/usr/bin/env python3
"""Heap allocations the server makes per acknowledged durable write, counted, not timed.

    Tools/write-allocations.py DIR [DIR ...] [--rounds N]

For each DIR holding a release `canopy-server` and `canopy-load` (the first DIR's `canopy-load`
drives every server), alternating for N rounds (default 2): starts the server on a free port with
its data in a temporary folder, runs `canopy-load writes --connections 100 --pipeline 32`
against it, and, in the middle of the run, counts the server's calls to glibc's `malloc` for three
seconds with a uprobe (`perf stat -e probe_libc:malloc`), against the writes `canopy_writes_total`
counted in the same seconds. The counts barely move from run to run, where this machine's
throughput moves by a tenth, so a change to the write path is measured here first.

Needs Linux, `perf` and permission to add a uprobe (root); the probe is added when missing
(`perf probe -x <the server's libc> malloc`). The probe slows every allocation, so the writes/s
printed beside the count are not the server's throughput.
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

EVENT = "probe_libc:malloc"


def say(message):
    print(f"write-allocations: {message}", file=sys.stderr, flush=True)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def ensure_probe(server):
    listed = subprocess.run(["perf", "probe", "-l"], capture_output=True, text=True).stdout
    if EVENT in listed:
        return
    libraries = subprocess.run(["ldd", server], capture_output=True, text=True).stdout
    libc = re.search(r"libc\.so\.6 => (\S+)", libraries)
    if not libc:
        sys.exit(f"write-allocations: cannot find the libc {server} loads (ldd)")
    added = subprocess.run(["perf", "probe", "-x", libc.group(1), "malloc"], capture_output=True, text=True)
    if added.returncode != 0:
        sys.exit(f"write-allocations: cannot add a uprobe on malloc: {added.stderr.strip()}")


def writes_total(port):
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    found = re.search(r"^canopy_writes_total(?:\{[^}]*\})? ([0-9.e+]+)$", metrics, re.M)
    if not found:
        sys.exit("write-allocations: the server's /metrics has no canopy_writes_total")
    return float(found.group(1))


def measure(folder, load):
    port = free_port()
    data = tempfile.mkdtemp(prefix="canopy-write-allocations-")
    server = subprocess.Popen(
        [os.path.join(folder, "canopy-server"), "--port", str(port), "--data", data, "--log-level", "error"])
    writer = None
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    sys.exit(f"write-allocations: {folder}/canopy-server did not answer /health")
                time.sleep(0.05)
        writer = subprocess.Popen(
            [load, "writes", "--server", f"127.0.0.1:{port}", "--connections", "100", "--pipeline", "32",
             "--duration", "8"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(2.5)
        before = writes_total(port)
        counted = subprocess.run(
            ["perf", "stat", "-x,", "-e", EVENT, "-p", str(server.pid), "--", "sleep", "3"],
            capture_output=True, text=True)
        after = writes_total(port)
        if writer.wait() != 0:
            sys.exit(f"write-allocations: canopy-load writes failed against {folder}/canopy-server")
        line = counted.stderr.strip().splitlines()[-1] if counted.stderr.strip() else ""
        if not line.split(",")[0].isdigit():
            sys.exit(f"write-allocations: perf stat counted nothing: {counted.stderr.strip()}")
        writes = after - before
        if writes <= 0:
            sys.exit("write-allocations: no write was acknowledged while counting")
        return int(line.split(",")[0]) / writes, writes / 3
    finally:
        if writer is not None and writer.poll() is None:
            writer.kill()
            writer.wait()
        server.terminate()
        server.wait()
        shutil.rmtree(data, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description="Heap allocations per acknowledged durable write.")
    parser.add_argument("folders", nargs="+", metavar="DIR")
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    load = os.path.join(options.folders[0], "canopy-load")
    for folder in options.folders:
        for binary in ("canopy-server",) + (("canopy-load",) if folder == options.folders[0] else ()):
            if not os.access(os.path.join(folder, binary), os.X_OK):
                sys.exit(f"write-allocations: no {binary} in {folder}")
    ensure_probe(os.path.join(options.folders[0], "canopy-server"))
    for round_number in range(1, options.rounds + 1):
        for folder in options.folders:
            per_write, rate = measure(folder, load)
            print(f"round {round_number} {folder}: {per_write:.2f} mallocs per write "
                  f"({rate:,.0f} writes/s under the probe)", flush=True)


if __name__ == "__main__":
    main()
