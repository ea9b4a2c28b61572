"""flaky_link's delay and reordering: the delaying proxy keeps each connection's byte order,
holds every chunk at least its delay, and lets a later request on one connection overtake an
earlier one on another; in the namespaces, the detour rules send a peer's new connections to
a broker's port through the proxy (and reset the ones opened before), and removing them heals."""
from __future__ import annotations

import random
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest

from praha.cluster import netns
from praha.testing.cluster import wait_for
from praha.testing.proxy import DelayingProxy


class EchoServer:
    """Records (connection index, bytes) in arrival order and echoes them back."""

    def __init__(self, host: str = "127.0.0.1"):
        self.sock = socket.create_server((host, 0))
        self.port = self.sock.getsockname()[1]
        self.arrivals: list[tuple[int, bytes]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        n = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn, n), daemon=True).start()
            n += 1

    def _serve(self, conn: socket.socket, n: int) -> None:
        with conn:
            while data := conn.recv(4096):
                with self.lock:
                    self.arrivals.append((n, data))
                conn.sendall(data)


def recv_exactly(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        assert chunk, "connection closed early"
        out += chunk
    return out


def test_order_within_a_connection_delay_and_reordering_across_connections():
    seed = next(s for s in range(100) if (lambda r: r.random() - r.random())(random.Random(s)) > 0.8)
    server = EchoServer()
    with DelayingProxy(("127.0.0.1", server.port), delay_ms=100, jitter_ms=4000, seed=seed) as proxy:
        first = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        second = socket.create_connection(("127.0.0.1", proxy.port), timeout=30)
        t0 = time.monotonic()
        first.sendall(b"A")     # drawn a delay at least 3.2 s longer than B's
        wait_for(lambda: proxy.chunks == 1, timeout=30)  # the proxy read A first
        second.sendall(b"B")
        assert recv_exactly(second, 1) == b"B"
        assert recv_exactly(first, 1) == b"A"
        assert time.monotonic() - t0 >= 0.1  # nothing arrives before the fixed delay
        assert [d for _, d in server.arrivals] == [b"B", b"A"]  # sent A first, B overtook it
        for i in range(20):  # within one connection: in order, however the delays fall
            first.sendall(b"%02d" % i)
        assert recv_exactly(first, 40) == b"".join(b"%02d" % i for i in range(20))
        first.close()
        second.close()


def test_the_proxy_process_explains_itself():
    out = subprocess.run([sys.executable, "-m", "praha.testing.proxy", "--help"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0
    assert "--jitter-ms" in out.stdout
    assert "reorder" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "praha.testing.proxy", "--listen", "nope", "--target", "x:1"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2
    assert "HOST:PORT" in bad.stderr


def test_detour_script_redirects_new_connections_and_resets_old_ones():
    script = netns.detour_script(("10.0.0.1", "10.0.0.2"), {9092: 19092})
    assert "ip saddr { 10.0.0.1, 10.0.0.2 } tcp dport 9092 redirect to :19092" in script
    assert "ip saddr { 10.0.0.1, 10.0.0.2 } tcp dport 9092 reject with tcp reset" in script
    # a secure broker: its inter-broker TLS port behind a proxy of its own too
    both = netns.detour_script(("10.0.0.1",), {9092: 19092, 9093: 19093})
    assert "ip saddr { 10.0.0.1 } tcp dport 9093 redirect to :19093" in both
    assert "ip saddr { 10.0.0.1 } tcp dport 9093 reject with tcp reset" in both
    assert "tcp dport 9092 redirect to :19092" in both


@pytest.mark.integration
def test_a_peers_connections_go_through_the_proxy_in_the_namespace(tmp_path):
    reason = netns.unavailable_reason() or ("" if shutil.which("nft") else "nftables' `nft` is not installed")
    if reason:
        pytest.skip(reason)
    layout = netns.create(["a1", "a2"], tmp_path / "netns.json")
    procs: list[subprocess.Popen[str]] = []
    try:
        a1, a2 = layout.node("a1"), layout.node("a2")
        server = f"import socket\ns=socket.create_server(('{a2.address}',9092))\nwhile True:\n c,_=s.accept()\n " \
                 "d=c.recv(100)\n c.sendall(d+b'@'+c.getpeername()[0].encode())\n c.close()\n"
        procs.append(subprocess.Popen(["ip", "netns", "exec", a2.netns, sys.executable, "-c", server]))
        proxy = subprocess.Popen(["ip", "netns", "exec", a2.netns, sys.executable, "-m", "praha.testing.proxy",
                                  "--listen", "0.0.0.0:19092", "--target", f"{a2.address}:9092", "--delay-ms", "300"],
                                 stdout=subprocess.PIPE, text=True)
        procs.append(proxy)
        assert proxy.stdout is not None
        assert "listening" in proxy.stdout.readline()
        client = ("import socket,sys,time\nfor _ in range(100):\n try:\n"
                  f"  c=socket.create_connection(('{a2.address}',9092),2)\n"
                  "  break\n except OSError: time.sleep(0.1)\nt=time.monotonic();c.sendall(b'x');"
                  "print(c.recv(100).decode(), round(time.monotonic()-t,3))\n")

        def ask() -> tuple[str, float]:
            out = subprocess.run(["ip", "netns", "exec", a1.netns, sys.executable, "-c", client],
                                 capture_output=True, text=True, timeout=60, check=True).stdout.split()
            return out[0], float(out[1])

        direct, _ = ask()
        assert direct == f"x@{a1.address}"  # straight from a1
        netns.apply_detour(a2, (a1.address,), {9092: 19092})
        detoured, took = ask()
        assert detoured == f"x@{a2.address}"
        assert took >= 0.3  # through a2's own proxy, held 300 ms
        netns.heal(a2)
        assert ask()[0] == f"x@{a1.address}"
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=10)
        netns.teardown(layout)
