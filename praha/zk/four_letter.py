"""ZooKeeper's four-letter-word commands (`srvr`, `ruok`), over TLS when the server serves
only its secure port (the Netty connection factory answers them there too)."""
from __future__ import annotations

import socket
import ssl
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from praha.zk.auth import ZkTls

#: the commands praha itself sends (readiness and version detection): the embedded server's
#: `4lw.commands.whitelist`, so nothing else (`dump`, `envi`, `cons`, ...) answers anyone
USED_COMMANDS = ("srvr", "ruok")


def tls_context(tls: ZkTls) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=tls.truststore)
    ctx.check_hostname = tls.check_hostname
    if tls.keystore:
        ctx.load_cert_chain(tls.keystore)
    return ctx


def four_letter_word(host: str, port: int, word: str, timeout: float = 1.0, tls: ZkTls | None = None) -> str | None:
    """Send a 4-letter command; None if nobody answers."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            s = tls_context(tls).wrap_socket(raw, server_hostname=host) if tls is not None else raw
            s.sendall(word.encode("ascii"))
            chunks = []
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks).decode("utf-8", "replace")
    except (OSError, ssl.SSLError):
        return None
