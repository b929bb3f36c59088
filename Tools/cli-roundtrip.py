#!/usr/bin/env python3
"""A large `canopy import` / `canopy export` round trip, compared byte for byte.

Generates a JSON document, written exactly as canopy-server writes JSON (compact, members in key
order, arrays for 0..n keys, a final newline), so that the export of what was imported must be the
same bytes. Two shapes:

- `records` (the default): about SIZE_MB megabytes of groups of 1,000 records with 4 KB strings,
  five 2 MB strings and an array of 2,000 objects;
- `wide`: one node with --children small children, as a Firebase export's `users/`:
  `{"users": {"u0000000": {"bio": <200 bytes>, "name": "user 0", "score": 0}, ...}}` (SIZE_MB is
  ignored); with `--leaves 6` each child has six leaves (`active`, `bio`, `city`, `email`, `name`,
  `score`; 400,000 children make 131 MB).

Starts canopy-server on a free port with its data in a temporary folder,
imports the file with `canopy import`, exports it again with `canopy export`, and samples each
`canopy` process's memory from /proc every 10 ms: the peak resident set (VmHWM) and the peak of
its anonymous part (RssAnon), which is what a streaming import or export must keep flat. Then
restarts the server on the same folder and times the first read (which loads the namespace), says
how much memory the server holds for the data before and after the restart, and compares the two
files with `cmp`.

    Tools/cli-roundtrip.py [SIZE_MB] [--shape records|wide] [--children N] [--leaves 3|6] [--bin DIR] [--keep]

Release builds first (DIR defaults to .build-release/release):
    swift build -c release --scratch-path .build-release --product canopy-server
    swift build -c release --scratch-path .build-release --product canopy
Needs free disk space for about three times SIZE_MB (the file, its export, the server's SQLite
file) and memory for the server, which holds the whole tree.
"""

import argparse
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

RECORDS_PER_GROUP = 1000
RECORD_TEXT = 4000
BIG_STRINGS = 5
BIG_STRING_BYTES = 2_000_000
LIST_LENGTH = 2000


def say(message):
    print(f"cli-roundtrip: {message}", file=sys.stderr, flush=True)


def record(group, index):
    # Keys in the server's order (none of them looks like an integer): n < name < ok < text.
    text = chr(ord("a") + (group + index) % 26) * RECORD_TEXT
    return f'{{"n":{group * 100_003 + index},"name":"record {group}-{index}","ok":{str(index % 2 == 0).lower()},"text":"{text}"}}'


def generate(path, size_mb):
    """Writes the document and returns its size in bytes."""
    target = size_mb * 1_000_000
    fixed = BIG_STRINGS * BIG_STRING_BYTES + LIST_LENGTH * 40
    groups = max(1, round((target - fixed) / (RECORDS_PER_GROUP * (RECORD_TEXT + 75))))
    started = time.monotonic()
    with open(path, "w", encoding="ascii") as out:
        out.write('{"big":{')
        out.write(",".join(f'"b{i}":"{chr(ord("A") + i) * BIG_STRING_BYTES}"' for i in range(BIG_STRINGS)))
        out.write('},"groups":{')
        for group in range(groups):
            if group:
                out.write(",")
            out.write(f'"g{group:05d}":{{')
            out.write(",".join(f'"r{i:05d}":{record(group, i)}' for i in range(RECORDS_PER_GROUP)))
            out.write("}")
            if group % 20 == 19:
                say(f"generating: {out.tell() / 1e6:.0f} of about {size_mb} MB")
        out.write('},"list":[')
        out.write(",".join(f'{{"i":{i},"v":"item {i}"}}' for i in range(LIST_LENGTH)))
        out.write("]}\n")
    size = os.path.getsize(path)
    say(f"generated {size / 1e6:.1f} MB ({groups} groups of {RECORDS_PER_GROUP} records) in {time.monotonic() - started:.1f} s")
    return size


WIDE_BIO = 200


def wide_child(i, leaves, bio):
    # Keys in the server's order (none of them looks like an integer).
    if leaves == 3:
        return f'"u{i:07d}":{{"bio":"{bio}","name":"user {i}","score":{i}}}'
    return (f'"u{i:07d}":{{"active":{str(i % 3 == 0).lower()},"bio":"{bio}","city":"city {i % 1000}",'
            f'"email":"user{i}@example.com","name":"user {i}","score":{i}}}')


def generate_wide(path, children, leaves=3):
    """Writes one node with `children` small children and returns the document's size in bytes."""
    started = time.monotonic()
    bio = "b" * WIDE_BIO
    with open(path, "w", encoding="ascii") as out:
        out.write('{"users":{')
        for start in range(0, children, 10_000):
            if start:
                out.write(",")
            out.write(",".join(wide_child(i, leaves, bio) for i in range(start, min(children, start + 10_000))))
        out.write("}}\n")
    size = os.path.getsize(path)
    say(f"generated {size / 1e6:.1f} MB (one node with {children} children) in {time.monotonic() - started:.1f} s")
    return size


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def memory_kb(pid):
    """(VmHWM, RssAnon) of a process in kB, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            fields = dict(line.split(":", 1) for line in status if ":" in line)
        return int(fields["VmHWM"].split()[0]), int(fields["RssAnon"].split()[0])
    except (FileNotFoundError, KeyError, ProcessLookupError):
        return None


def resident_kb(pid):
    """VmRSS of a running process, in kB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def start_server(binary, data):
    """Starts canopy-server on a free port with `data` as its folder; returns it and its URL once it answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([binary, "--port", str(port), "--data", data, "--log-level", "error"])
    for _ in range(200):
        try:
            urllib.request.urlopen(f"{url}/health", timeout=1)
            return server, url
        except OSError:
            time.sleep(0.05)
    server.terminate()
    sys.exit("cli-roundtrip: canopy-server did not answer /health")


def cpu_seconds(pid):
    """User and system CPU time of a running process, in seconds."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_sampled(arguments, stdout):
    """Runs `canopy` and returns (seconds, peak VmHWM kB, peak RssAnon kB, its CPU seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    process = subprocess.Popen(arguments, stdout=stdout, stderr=subprocess.PIPE)
    peaks = [0, 0]

    def sample():
        while process.poll() is None:
            figures = memory_kb(process.pid)
            if figures:
                peaks[0] = max(peaks[0], figures[0])
                peaks[1] = max(peaks[1], figures[1])
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, errors = process.communicate()
    sampler.join()
    seconds = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if process.returncode != 0:
        sys.exit(f"cli-roundtrip: {' '.join(arguments[1:3])} failed ({process.returncode}): {errors.decode().strip()}")
    return seconds, peaks[0], peaks[1], cpu


def describe(what, size, figures):
    seconds, hwm, anon, cli_cpu, server_cpu = figures
    return (f"{what}: {seconds:.1f} s ({size / 1e6 / seconds:.1f} MB/s), peak RSS {hwm / 1024:.0f} MB, "
            f"peak anonymous {anon / 1024:.0f} MB; CPU: canopy {cli_cpu:.2f} s, server {server_cpu:.2f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("size_mb", nargs="?", type=int, default=1000)
    parser.add_argument("--shape", choices=["records", "wide"], default="records")
    parser.add_argument("--children", type=int, default=100_000, help="children of the wide node")
    parser.add_argument("--leaves", type=int, choices=[3, 6], default=3, help="leaves of each child of the wide node")
    parser.add_argument("--bin", default=".build-release/release")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    options = parser.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    server_binary = os.path.join(options.bin, "canopy-server")
    cli = os.path.join(options.bin, "canopy")
    for binary in (server_binary, cli):
        if not os.access(binary, os.X_OK):
            sys.exit(f"cli-roundtrip: {binary} is missing; build it first (see --help)")

    folder = tempfile.mkdtemp(prefix="canopy-roundtrip-")
    server = None
    try:
        source = os.path.join(folder, "source.json")
        exported = os.path.join(folder, "export.json")
        if options.shape == "wide":
            size = generate_wide(source, options.children, options.leaves)
        else:
            size = generate(source, options.size_mb)
        server, url = start_server(server_binary, os.path.join(folder, "data"))
        idle = resident_kb(server.pid)

        say(f"importing into {url}/roundtrip")
        server_cpu = cpu_seconds(server.pid)
        imported = run_sampled([cli, "import", "roundtrip", source, "--url", url], subprocess.DEVNULL)
        imported += (cpu_seconds(server.pid) - server_cpu,)
        say(describe("import", size, imported))

        say("exporting")
        server_cpu = cpu_seconds(server.pid)
        with open(exported, "wb") as out:
            exported_figures = run_sampled([cli, "export", "roundtrip", "--url", url], out)
        exported_figures += (cpu_seconds(server.pid) - server_cpu,)
        say(describe("export", size, exported_figures))
        server_memory = memory_kb(server.pid)
        held = resident_kb(server.pid)

        say("restarting the server on the same folder")
        server.terminate()
        server.wait()
        server, url = start_server(server_binary, os.path.join(folder, "data"))
        started = time.monotonic()
        urllib.request.urlopen(f"{url}/roundtrip.json?shallow=true", timeout=600).read()
        first_read = time.monotonic() - started
        loaded = resident_kb(server.pid)

        same = subprocess.run(["cmp", source, exported]).returncode == 0
        print(f"file: {size / 1e6:.1f} MB; export {os.path.getsize(exported) / 1e6:.1f} MB, "
              f"{'byte-identical' if same else 'DIFFERENT'}")
        print(describe("import", size, imported))
        print(describe("export", size, exported_figures))
        if server_memory:
            print(f"server: peak RSS {server_memory[0] / 1024:.0f} MB (it holds the whole tree)")
        print(f"server: {held / 1024:.0f} MB resident after the export, {(held - idle) * 1024 / size:.2f} times "
              f"the JSON above the {idle / 1024:.0f} MB of a server holding nothing; after a restart, the first "
              f"read took {first_read:.2f} s and left {loaded / 1024:.0f} MB resident "
              f"({(loaded - idle) * 1024 / size:.2f} times the JSON)")
        return 0 if same else 1
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        if options.keep:
            say(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
