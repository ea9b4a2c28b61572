"""How a client connects to a listener: TLS (an `ssl.SSLContext`) and SASL (mechanism,
user, password), and the client's side of the SASL exchange over SaslHandshake v1 +
SaslAuthenticate (PLAIN: one token; SCRAM: client-first, client-final, then the
server's signature checked).
"""
from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass

from praha.errors import ErrorCode, PrahaError
from praha.protocol.scram import ScramClient, ScramMechanism


@dataclass(frozen=True)
class ClientSecurity:
    listener: str = "PLAINTEXT"
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str = ""
    username: str = ""
    password: str = ""


PLAINTEXT = ClientSecurity()


class SaslAuthenticationError(PrahaError):
    code = ErrorCode.SASL_AUTHENTICATION_FAILED


def sasl_tokens(security: ClientSecurity) -> Callable[[bytes | None], bytes | None]:
    """The client's token sequence: call with None first, then with each server token;
    returns the next token to send, or None when the exchange is complete."""
    mechanism = security.sasl_mechanism
    if mechanism == "PLAIN":
        sent = [False]

        def plain(server: bytes | None) -> bytes | None:
            if sent[0]:
                return None
            sent[0] = True
            return f"\0{security.username}\0{security.password}".encode()

        return plain
    scram_mechanism = ScramMechanism.by_name(mechanism)
    if scram_mechanism is None:
        raise SaslAuthenticationError(f"SASL mechanism {mechanism!r} is not supported by praha's client")
    client = ScramClient(scram_mechanism, security.username, security.password)
    step = [0]

    def scram(server: bytes | None) -> bytes | None:
        step[0] += 1
        if step[0] == 1:
            return client.first()
        if step[0] == 2:
            assert server is not None
            return client.final(server)
        assert server is not None
        client.verify(server)
        return None

    return scram
