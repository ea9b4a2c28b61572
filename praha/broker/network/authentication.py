"""A new connection's authentication, before its first ordinary request (Kafka's
authenticators in the socket server).

- PLAINTEXT: `User:ANONYMOUS`.
- SSL: the client certificate's DN through `ssl.principal.mapping.rules` (`User:<name>`),
  `User:ANONYMOUS` without a certificate; a DN no rule maps closes the connection.
- SASL_PLAINTEXT / SASL_SSL: the SASL exchange (`praha.security.sasl`) comes first. Steps:
  1. ApiVersions may be asked (answered from the broker's table), then SaslHandshake
     names the mechanism (an unknown one: UNSUPPORTED_SASL_MECHANISM with the enabled
     list, then the connection is closed); 2. the tokens, in SaslAuthenticate requests
     (handshake v1) or bare frames (v0); 3. success gives `User:<name>`; a failure is
     answered with SASL_AUTHENTICATION_FAILED and the connection closed. Any other request
     before success closes the connection unanswered, as Kafka does.
"""
from __future__ import annotations

import logging
import struct
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

from praha.errors import ErrorCode, InvalidRequestError, PrahaError
from praha.protocol.api_keys import ApiKey
from praha.protocol.framing import DecodedRequest, Session, decode_request, encode_response
from praha.protocol.messages.gen.metadata import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)
from praha.security.listener import ListenerSecurity
from praha.security.principal import map_dn
from praha.security.sasl import SaslAuthenticator, SaslFailure, SaslState
from praha.security.tls import peer_dn


class FrameConnection(Protocol):
    """What authentication needs of a connection (`network.FrameConnection`)."""

    transport: Any

    async def next_frame(self) -> bytearray | None: ...

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

log = logging.getLogger(__name__)
_SIZE = struct.Struct(">i")


class AuthenticationFailed(PrahaError):
    """The connection is closed: not authenticated."""


def transport_session(security: ListenerSecurity, conn: FrameConnection, client_host: str) -> Session:
    """The session a connection has from its transport alone (the principal from its
    certificate on SSL; SASL listeners replace it once the exchange succeeds)."""
    principal = "User:ANONYMOUS"
    if security.protocol == "SSL" and conn.transport is not None:
        dn = peer_dn(conn.transport.get_extra_info("ssl_object"))
        if dn is not None:
            principal = f"User:{map_dn(security.principal_rules, dn)}"
    return Session(principal, security.name, security.protocol, client_host)


async def sasl_authenticate(conn: FrameConnection, auth: SaslAuthenticator, session: Session,
                            versions: Mapping[int, tuple[int, int]],
                            api_versions: Callable[[DecodedRequest], Awaitable[Any]]) -> Session:
    """Run the exchange to its end: the authenticated session, or AuthenticationFailed."""
    while True:
        body = await conn.next_frame()
        if body is None:
            raise AuthenticationFailed("the client went away during SASL authentication")
        if auth.state is SaslState.RAW:  # SaslHandshake v0: bare tokens
            try:
                reply = await auth.step(bytes(body))
            except SaslFailure as e:
                raise AuthenticationFailed(str(e)) from None
            conn.write(_SIZE.pack(len(reply)) + reply)
            await conn.drain()
        else:
            try:
                req = decode_request(body, versions, session)
            except (InvalidRequestError, PrahaError) as e:
                raise AuthenticationFailed(f"bad request during SASL authentication: {e}") from None
            await _answer(conn, auth, req, api_versions)
        if auth.state is SaslState.COMPLETE:
            return Session(auth.principal, session.listener, session.security_protocol, session.client_host)


async def _answer(conn: FrameConnection, auth: SaslAuthenticator, req: DecodedRequest,
                  api_versions: Callable[[DecodedRequest], Awaitable[Any]]) -> None:
    if req.api_key == ApiKey.API_VERSIONS and auth.state is SaslState.HANDSHAKE:
        await _send(conn, req, await api_versions(req))
        return
    if req.api_key == ApiKey.SASL_HANDSHAKE:
        mechanism = req.body(SaslHandshakeRequest).mechanism
        error = auth.handshake(mechanism, req.api_version)
        await _send(conn, req, SaslHandshakeResponse(error_code=error, mechanisms=list(auth.listener.mechanisms)))
        if error != ErrorCode.NONE:
            raise AuthenticationFailed(f"SASL mechanism {mechanism!r} refused ({error.name})")
        return
    if req.api_key == ApiKey.SASL_AUTHENTICATE and auth.state is SaslState.AUTHENTICATE:
        try:
            reply = await auth.step(bytes(req.body(SaslAuthenticateRequest).auth_bytes or b""))
        except SaslFailure as e:
            await _send(conn, req, SaslAuthenticateResponse(error_code=e.code, error_message=str(e), auth_bytes=b"",
                                                            session_lifetime_ms=0))
            raise AuthenticationFailed(str(e)) from None
        await _send(conn, req, SaslAuthenticateResponse(error_code=0, error_message=None, auth_bytes=reply,
                                                        session_lifetime_ms=0))
        return
    api = ApiKey(req.api_key).name if req.api_key in ApiKey._value2member_map_ else req.api_key
    raise AuthenticationFailed(f"unexpected request {api} in SASL state {auth.state.value}")


async def _send(conn: FrameConnection, req: DecodedRequest, response: Any) -> None:
    conn.write(bytes(encode_response(req.header, response, req.api_version)))
    await conn.drain()
