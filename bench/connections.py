"""Memory a broker spends per idle client connection, and what it gives back (issue 15 §4).

One real broker on 127.0.0.1. For each size N: open N connections, each sends one
ApiVersions request and reads the answer (so the broker has served it), then stays idle;
read the broker's RSS; close them all; read the RSS again. Reported: KiB per idle
connection (RSS growth / N) against the target of 8 KiB, and the RSS still held after the
connections closed. Figures, not asserts; the section of bench/RESULTS.md is rewritten.

Usage: .venv/bin/python bench/connections.py [--sizes 1000,3000]
"""
from __future__ import annotations

import argparse
import resource
import socket
import struct
import tempfile
import time
from pathlib import Path

from harness import REPO, BrokerProcess, machine_line, rss_mb, start_zookeeper, write_section

TARGET_KIB = 8.0
HEADING = "## Idle connections (issue 15 §4)"
# ApiVersions v0, correlation id 1, client id "bench"
API_VERSIONS = struct.pack(">hhih", 18, 0, 1, 5) + b"bench"
FRAME = struct.pack(">i", len(API_VERSIONS)) + API_VERSIONS


def open_idle(port: int, n: int) -> list[socket.socket]:
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(FRAME)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        s.recv(size, socket.MSG_WAITALL)
        out.append(s)
    return out


def settle(pid: int, seconds: float = 3.0) -> float:
    time.sleep(seconds)
    return rss_mb(pid)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,3000", help="idle connections per step (default 1000,3000)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, max(sizes) + 1024)), hard))
    rows = []
    with tempfile.TemporaryDirectory(prefix="praha-bench-conn-") as d:
        zk = start_zookeeper(Path(d) / "zk")
        broker = BrokerProcess(Path(d) / "broker", zk.connect_string)
        try:
            broker.start()
            broker.wait_controller_started(60, active=True)
            base = settle(broker.pid)
            for n in sizes:
                before = settle(broker.pid, 1.0)
                socks = open_idle(broker.port, n)
                idle = settle(broker.pid)
                for s in socks:
                    s.close()
                after = settle(broker.pid)
                per = (idle - before) * 1024 / n
                rows.append((n, before, idle, after, per))
                print(f"{n:>6} idle: RSS {before:.1f} -> {idle:.1f} MB ({per:.1f} KiB each), "
                      f"after close {after:.1f} MB", flush=True)
        finally:
            broker.stop()
            zk.stop()
    table = ["| idle connections | RSS before (MB) | RSS idle (MB) | KiB per connection | ratio to 8 KiB | "
             "RSS after close (MB) |", "| --- | --- | --- | --- | --- | --- |"]
    for n, before, idle, after, per in rows:
        table.append(f"| {n} | {before:.1f} | {idle:.1f} | {per:.1f} | {per / TARGET_KIB:.2f} | {after:.1f} |")
    section = (f"Command: `python bench/connections.py --sizes {args.sizes}` — one broker, each connection served one "
               f"ApiVersions request then idle; broker RSS at start {base:.1f} MB. {machine_line()}\n\n"
               + "\n".join(table) + "\n")
    write_section(REPO / "bench" / "RESULTS.md", HEADING, HEADING + "\n\n" + section)


if __name__ == "__main__":
    main()
