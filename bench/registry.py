"""The Schema Registry's own cost (issue 25): registrations per second and
`GET /schemas/ids/{id}` requests per second on one broker.

One broker (a local cluster of 1, embedded ZooKeeper) with its registry on. One client
thread on a kept-alive HTTP connection: --registrations distinct Avro schemas registered
(each: no forwarding — this broker is the primary —, caught up with `_schemas`,
validated, compatibility-checked, an id from the ZooKeeper counter, written acks=all and
applied to the primary's state), then --gets reads of the ids. Yardsticks measured in
the same run: a trivial `http.server` answering a fixed JSON body in this process (the HTTP
stack's own ceiling), and acks=all produces of one record each with confluent-kafka (the
floor of any durable write). Figures, not asserts; the section of bench/RESULTS.md is
rewritten.

Usage: .venv/bin/python bench/registry.py [--registrations 300] [--gets 5000]
(RESULTS.md's figures: --registrations 200 --gets 3000)
"""
from __future__ import annotations

import argparse
import http.client
import json
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from confluent_kafka import Producer
from harness import REPO, machine_line, write_section

from praha.cluster.local import LocalCluster

HEADING = "## Schema Registry (issue 25)"


def schema(i: int) -> bytes:
    return json.dumps({"schema": json.dumps({"type": "record", "name": f"R{i}", "fields": [
        {"name": "a", "type": "int"}, {"name": f"f{i}", "type": "string", "default": ""}]})}).encode()


def rate(n: int, fn) -> float:
    start = time.perf_counter()
    for i in range(n):
        fn(i)
    return n / (time.perf_counter() - start)


def call(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None = None) -> dict:
    conn.request(method, path, body=body, headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    resp = conn.getresponse()
    data = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"{method} {path}: {resp.status} {data[:200]!r}")
    return json.loads(data)


def produces_per_second(bootstrap: str, n: int) -> float:
    """acks=all single-record produces, each flushed (the producer is gone when this returns)."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})

    def produce_one(i: int) -> None:
        producer.produce("bench-registry-yardstick", b"x" * 200)
        producer.flush(30)

    produce_one(0)
    return rate(n, produce_one)


class Fixed(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # as the registry's handler
    body = json.dumps({"schema": json.dumps({"type": "record", "name": "R", "fields": []})}).encode()

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args) -> None:
        pass


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--registrations", type=int, default=300)
    p.add_argument("--gets", type=int, default=5000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="praha-bench-registry-") as d:
        cluster = LocalCluster(Path(d) / "cluster")
        try:
            state = cluster.up(1, timeout=180)
            b = state.brokers[1]
            url = urlsplit(b.schema_registry)
            conn = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
            call(conn, "POST", "/subjects/warm-up/versions", schema(-1))
            reg_rate = rate(args.registrations, lambda i: call(conn, "POST", f"/subjects/s{i}/versions", schema(i)))
            ids = [call(conn, "GET", f"/subjects/s{i}/versions/1")["id"] for i in range(min(args.registrations, 50))]
            get_rate = rate(args.gets, lambda i: call(conn, "GET", f"/schemas/ids/{ids[i % len(ids)]}"))
            conn.close()

            produce_rate = produces_per_second(f"127.0.0.1:{b.port}", args.registrations)
        finally:
            if cluster.exists():
                cluster.down()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Fixed)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    fixed = http.client.HTTPConnection("127.0.0.1", server.server_address[1], timeout=30)
    fixed_rate = rate(args.gets, lambda i: call(fixed, "GET", "/"))
    fixed.close()
    server.shutdown()

    table = "\n".join([
        "| what | per second | ratio to its yardstick |", "|---|---:|---:|",
        f"| registrations (distinct Avro schemas, BACKWARD) | {reg_rate:,.0f} | {reg_rate / produce_rate:.2f} of "
        "acks=all single-record produces |",
        f"| acks=all single-record produces (confluent-kafka, flush each) | {produce_rate:,.0f} | |",
        f"| `GET /schemas/ids/{{id}}` | {get_rate:,.0f} | {get_rate / fixed_rate:.2f} of the trivial server |",
        f"| trivial `http.server` GET (fixed body, same process as the client) | {fixed_rate:,.0f} | |",
    ])
    section = (
        f"{HEADING}\n\nCommand: `.venv/bin/python bench/registry.py --registrations {args.registrations} "
        f"--gets {args.gets}`\n\nMachine: {machine_line()}.\n\nOne broker with its registry; one client "
        "thread on a kept-alive HTTP connection. A registration is an HTTP request, a catch-up with "
        "`_schemas` (ListOffsets), parsing and the compatibility check, an id from the ZooKeeper counter "
        "(one conditional set), an acks=all write, applied to the primary's own state at once. Serializers cache "
        "ids and schemas, so these costs are paid once per schema by a producer or consumer.\n\n"
        f"{table}\n"
    )
    print(section)
    write_section(REPO / "bench" / "RESULTS.md", HEADING, section)


if __name__ == "__main__":
    main()
