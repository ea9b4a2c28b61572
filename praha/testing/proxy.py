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
"""
from __future__ import annotations

import socket
import threading


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

    def __enter__(self) -> "TcpProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals ----------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except socket.timeout:
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
                    t = threading.Thread(target=self._pump, args=(src, dst), daemon=True)
                    self._threads.append(t)
                    t.start()

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
