"""One connection's SASL authentication (Kafka's SaslServerAuthenticator), without I/O.

States: HANDSHAKE (only ApiVersions and SaslHandshake may come) → AUTHENTICATE (after
SaslHandshake v1: SaslAuthenticate requests carry the tokens) or RAW (after v0: bare
size-prefixed tokens) → COMPLETE, with the principal `User:<name>`. Any failure is final:
the caller answers it (SASL_AUTHENTICATION_FAILED / UNSUPPORTED_SASL_MECHANISM) and
closes the connection.

Mechanisms: PLAIN (token "authzid\\0user\\0password", users from the listener's JAAS
config) and SCRAM-SHA-256/512 (two round trips; credentials looked up by the caller's
`lookup`, from ZooKeeper).
"""
from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from enum import Enum

from praha.errors import ErrorCode, PrahaError
from praha.protocol.scram import ScramCredential, ScramError, ScramMechanism
from praha.security.listener import ListenerSecurity
from praha.security.scram_server import ScramServer

ScramLookup = Callable[[str, ScramMechanism], Awaitable[ScramCredential | None]]


class SaslState(Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    RAW = "raw"
    COMPLETE = "complete"
    FAILED = "failed"


class SaslFailure(PrahaError):
    """Authentication failed: answer with this code and message, then close."""

    code = ErrorCode.SASL_AUTHENTICATION_FAILED


class SaslAuthenticator:
    def __init__(self, listener: ListenerSecurity, lookup: ScramLookup):
        self.listener = listener
        self.lookup = lookup
        self.state = SaslState.HANDSHAKE
        self.mechanism = ""
        self.user = ""
        self._scram: ScramServer | None = None

    @property
    def principal(self) -> str:
        return f"User:{self.user}"

    def handshake(self, mechanism: str, version: int) -> ErrorCode:
        """SaslHandshake: NONE, or the error to answer (then close)."""
        if self.state is not SaslState.HANDSHAKE:
            self.state = SaslState.FAILED
            return ErrorCode.ILLEGAL_SASL_STATE
        if mechanism not in self.listener.mechanisms:
            self.state = SaslState.FAILED
            return ErrorCode.UNSUPPORTED_SASL_MECHANISM
        self.mechanism = mechanism
        scram = ScramMechanism.by_name(mechanism)
        self._scram = ScramServer(scram) if scram is not None else None
        self.state = SaslState.AUTHENTICATE if version >= 1 else SaslState.RAW
        return ErrorCode.NONE

    async def step(self, token: bytes) -> bytes:
        """The server's answer to a client token; the state is COMPLETE after the last
        one. SaslFailure when the credentials are wrong (the state is then FAILED)."""
        if self.state not in (SaslState.AUTHENTICATE, SaslState.RAW):
            self.state = SaslState.FAILED
            raise SaslFailure(f"unexpected SASL token in state {self.state.value}", ErrorCode.ILLEGAL_SASL_STATE)
        try:
            if self._scram is None:
                return self._plain(token)
            return await self._scram_step(self._scram, token)
        except SaslFailure:
            self.state = SaslState.FAILED
            raise
        except (ScramError, UnicodeDecodeError, ValueError):
            self.state = SaslState.FAILED
            raise SaslFailure(f"Authentication failed during authentication due to invalid credentials with SASL "
                              f"mechanism {self.mechanism}") from None

    def _plain(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslFailure("Invalid SASL/PLAIN response: expected 3 tokens")
        authzid, user, password = (p.decode("utf-8") for p in parts)
        if authzid and authzid != user:
            raise SaslFailure("Authentication failed: Client requested an authorization id that is different "
                              "from username")
        expected = self.listener.plain_users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslFailure("Authentication failed: Invalid username or password")
        self.user = user
        self.state = SaslState.COMPLETE
        return b""

    async def _scram_step(self, scram: ScramServer, token: bytes) -> bytes:
        if not scram.user:
            user = scram.receive_first(token)
            return scram.server_first(await self.lookup(user, scram.mechanism))
        final = scram.receive_final(token)
        self.user = scram.user
        self.state = SaslState.COMPLETE
        return final
