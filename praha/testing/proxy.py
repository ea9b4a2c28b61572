"""A loopback TCP proxy that can cut the path between a client and a server.

Killing ZooKeeper does not expire sessions (they are restored when it comes back); cutting
the TCP path between one broker and ZooKeeper does, once the session timeout passes.

Flow: an accept thread takes connections on `listen_port` and, for each, dials `target`
and starts one pump thread per direction. `cut()` closes every open connection and, until
`restore()`, accepts-and-closes new ones: the client sees an immediate drop. With
`cut(blackhole=True)` connections old and new stay open but nothing is forwarded (a
network partition: the client only notices through its own timeouts); `restore()` then
closes them, since their byte streams are broken. `stop()` closes everything and joins
the threads.

`DelayingProxy` also holds back what the client sends: every chunk is delivered `delay_ms`
plus a random share of `jitter_ms` after it arrived, in order within its connection but not
across connections — a request sent on one connection can overtake one sent earlier on
another (what a slow, reordering link does to a Kafka client's requests; this kernel has no
`tc netem`). `python -m praha.testing.proxy` runs one as a process of its own (the chaos
harness starts it inside a broker's network namespace).
"""
from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import socket
import sys
import threading
import time


class TcpProxy:
    def __init__(self, target: tuple[str, int], listen_port: int = 0, host: str = "127.0.0.1"):
        self.target = target
        self.host = host
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((host, listen_port))
        self._listener.listen(64)
        self._listener.settimeout(0.1)
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._conns: set[socket.socket] = set()
        self._held: set[socket.socket] = set()
        self._cut = False
        self._blackhole = False
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []
        self._accept_thread = threading.Thread(target=self._accept_loop, name=f"tcp-proxy-{self.port}", daemon=True)
        self._accept_thread.start()

    @property
    def connect_string(self) -> str:
        return f"{self.host}:{self.port}"

    def cut(self, blackhole: bool = False) -> None:
        """Drop every connection and refuse new ones; or, with `blackhole`, forward nothing."""
        with self._lock:
            self._cut = True
            self._blackhole = blackhole
            conns = set() if blackhole else self._conns
            if not blackhole:
                self._conns = set()
        for s in conns:
            _close(s)

    def restore(self) -> None:
        """Forward new connections again (connections that lived through a blackhole are closed)."""
        with self._lock:
            broken = self._held | (self._conns if self._blackhole else set())
            self._held = set()
            if self._blackhole:
                self._conns = set()
            self._cut = False
            self._blackhole = False
        for s in broken:
            _close(s)

    def stop(self) -> None:
        self._stopped.set()
        self.restore()
        self.cut()
        self._accept_thread.join(timeout=5)
        _close(self._listener)
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ----------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                if self._cut:
                    if self._blackhole:
                        self._held.add(client)
                    else:
                        _close(client)
                    continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _close(client)
                continue
            upstream.settimeout(None)
            client.settimeout(None)
            with self._lock:
                if self._cut:  # cut while dialing
                    _close(client)
                    _close(upstream)
                    continue
                self._conns.update((client, upstream))
                self._threads = [t for t in self._threads if t.is_alive()]
                for src, dst in ((client, upstream), (upstream, client)):
                    pump = self._forward if src is client else self._pump
                    t = threading.Thread(target=pump, args=(src, dst), daemon=True)
                    self._threads.append(t)
                    t.start()

    def _forward(self, src: socket.socket, dst: socket.socket) -> None:
        """Client to server (what a subclass may hold back)."""
        self._pump(src, dst)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if self._cut and self._blackhole:
                    continue  # partitioned: the bytes are lost
                dst.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._conns.discard(src)
                self._conns.discard(dst)
            _close(src)
            _close(dst)


def _close(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass


class DelayingProxy(TcpProxy):
    def __init__(self, target: tuple[str, int], delay_ms: float, jitter_ms: float, listen_port: int = 0,
                 host: str = "127.0.0.1", seed: int = 0):
        self.delay_s = delay_ms / 1000.0
        self.jitter_s = jitter_ms / 1000.0
        self._rng = random.Random(seed)
        self.chunks = 0
        super().__init__(target, listen_port, host)

    def _forward(self, src: socket.socket, dst: socket.socket) -> None:
        """Read as it comes; a second thread delivers each chunk when its time is due."""
        due: collections.deque[tuple[float, bytes]] = collections.deque()
        ready = threading.Condition()
        done = threading.Event()

        def deliver() -> None:
            try:
                while True:
                    with ready:
                        while not due and not done.is_set():
                            ready.wait(0.5)
                        if not due:
                            return
                        at, data = due[0]
                    wait = at - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                    with ready:
                        due.popleft()
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                _close(src)
                _close(dst)

        writer = threading.Thread(target=deliver, daemon=True)
        writer.start()
        last = 0.0
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with self._lock:
                    delay = self.delay_s + self._rng.random() * self.jitter_s
                    self.chunks += 1
                last = max(last, time.monotonic() + delay)  # in order within the connection
                with ready:
                    due.append((last, data))
                    ready.notify()
        except OSError:
            pass
        finally:
            done.set()
            with ready:
                ready.notify()
            writer.join(timeout=self.delay_s + self.jitter_s + 5)
            with self._lock:
                self._conns.discard(src)
                self._conns.discard(dst)
            _close(src)
            _close(dst)


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: expected HOST:PORT")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m praha.testing.proxy",
                                description="A TCP proxy that delays (and so reorders across connections) what "
                                            "clients send; ends on SIGTERM or when its parent exits.")
    p.add_argument("--listen", type=_address, required=True, help="HOST:PORT to accept on")
    p.add_argument("--target", type=_address, required=True, help="HOST:PORT to forward to")
    p.add_argument("--delay-ms", type=float, default=0.0, help="every chunk is held at least this long")
    p.add_argument("--jitter-ms", type=float, default=0.0, help="plus a random share of this (reordering)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    parent = os.getppid()
    proxy = DelayingProxy(args.target, args.delay_ms, args.jitter_ms, args.listen[1], args.listen[0], args.seed)
    print(f"listening on {args.listen[0]}:{proxy.port}", flush=True)
    try:
        while not stop.wait(0.5) and os.getppid() == parent:
            pass
    finally:
        print(f"forwarded {proxy.chunks} delayed chunks", flush=True)
        proxy.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
