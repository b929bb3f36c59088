#!/usr/bin/env python3
"""The first ordered query on a wide node, over REST, against a release canopy-server.

Starts canopy-server (SQLite in a temporary folder) on a free port, writes N players
`{"p000000": {"name": "player 0", "score": <random>}, ...}` in one PUT, sets rules with
`.indexOn: ["score"]`, then times `GET /players.json?orderBy="score"&limitToLast=10` three times
(the first builds the index on the node, the next use it), checks the answer, and times 200
sequential PATCHes of one score each while the index is kept.

    Tools/first-query.py [--players N] [--bin DIR]

DIR defaults to .build-release/release (swift build -c release --scratch-path .build-release
--product canopy-server).
"""

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=100_000)
    parser.add_argument("--bin", default=".build-release/release")
    options = parser.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    binary = os.path.join(options.bin, "canopy-server")
    if not os.access(binary, os.X_OK):
        sys.exit(f"first-query: {binary} is missing; build it first (see --help)")
    folder = tempfile.mkdtemp(prefix="canopy-first-query-")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([binary, "--port", str(port), "--data", folder, "--log-level", "error"])

    def request(method, path, body=None):
        message = urllib.request.Request(base + path, data=body, method=method)
        message.add_header("Authorization", "Bearer owner")
        with urllib.request.urlopen(message, timeout=600) as response:
            return response.read()

    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(base + "/health", timeout=1)
                break
            except OSError:
                time.sleep(0.05)
        else:
            sys.exit("first-query: canopy-server did not answer /health")
        rng = random.Random(7)
        players = {
            f"p{i:06d}": {"score": rng.randint(0, 1_000_000), "name": f"player {i}"} for i in range(options.players)}
        request("PUT", "/players.json", json.dumps(players).encode())
        rules = {"rules": {".read": True, ".write": True, "players": {".indexOn": ["score"]}}}
        request("PUT", "/.settings/rules.json", json.dumps(rules).encode())
        query = "/players.json?orderBy=%22score%22&limitToLast=10"
        times = []
        for round in range(3):
            started = time.perf_counter()
            answer = request("GET", query)
            times.append((time.perf_counter() - started) * 1000)
            if round == 0:
                top = sorted(players.items(), key=lambda item: (item[1]["score"], item[0]))[-10:]
                if set(json.loads(answer)) != {key for key, _ in top}:
                    sys.exit("first-query: the query answered the wrong players")
        started = time.perf_counter()
        for i in range(200):
            request("PATCH", "/players.json", json.dumps({f"p{i:06d}/score": 2_000_000 + i}).encode())
        update = (time.perf_counter() - started) * 1000 / 200
        print(f"{options.players} players: first ordered query {times[0]:.0f} ms, then {times[1]:.1f} and "
              f"{times[2]:.1f} ms; a PATCH of one score with the index kept {update:.2f} ms (200 in turn)")
        return 0
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
