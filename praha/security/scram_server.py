"""The server's side of one SCRAM exchange (RFC 5802 §3, Kafka's ScramSaslServer).

Steps: 1. `receive_first(client_first)` → the user name (the caller looks its credential
up); 2. `server_first(credential)` → the challenge (for an unknown user, made-up salt
and iterations, so the answer does not tell whether the user exists; the proof then
fails); 3. `receive_final(client_final)` → the server-final message, or ScramError when
the nonce or proof is wrong.
"""
from __future__ import annotations

import base64
import hmac
import os

from praha.protocol.scram import (
    CHANNEL_BINDING,
    MIN_ITERATIONS,
    ScramCredential,
    ScramError,
    ScramMechanism,
    new_nonce,
    parse_attributes,
    saslname_decode,
)


class ScramServer:
    def __init__(self, mechanism: ScramMechanism, nonce: str | None = None):
        self.mechanism = mechanism
        self.user = ""
        self._client_first_bare = ""
        self._client_nonce = ""
        self._nonce = nonce or new_nonce()
        self._server_first = ""
        self._credential: ScramCredential | None = None

    def receive_first(self, message: bytes) -> str:
        text = message.decode("utf-8", "replace")
        gs2, sep, bare = text.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if gs2 != "n" or not sep or not sep2:
            raise ScramError("client-first message: channel binding is not supported (expected 'n,,')")
        attrs = parse_attributes(bare)
        if "n" not in attrs or "r" not in attrs or not attrs["r"]:
            raise ScramError("client-first message needs n= and r=")
        self.user = saslname_decode(attrs["n"])
        if authzid and authzid != f"a={attrs['n']}":
            raise ScramError("authorization id must be the user name")
        self._client_first_bare, self._client_nonce = bare, attrs["r"]
        return self.user

    def server_first(self, credential: ScramCredential | None) -> bytes:
        self._credential = credential
        salt, iterations = (credential.salt, credential.iterations) if credential else (os.urandom(32), MIN_ITERATIONS)
        self._server_first = (f"r={self._client_nonce}{self._nonce},s={base64.b64encode(salt).decode()},"
                              f"i={iterations}")
        return self._server_first.encode()

    def receive_final(self, message: bytes) -> bytes:
        text = message.decode("utf-8", "replace")
        without_proof, sep, proof_attr = text.rpartition(",p=")
        attrs = parse_attributes(without_proof) if sep else {}
        # Kafka 3.8.1+ accepts a nonce that only ends with the server's: librdkafka before
        # 2.6.1 repeats the client nonce in front of it
        if attrs.get("c") != CHANNEL_BINDING or not attrs.get("r", "").endswith(self._client_nonce + self._nonce):
            raise ScramError("client-final message: wrong channel binding or nonce")
        credential = self._credential
        if credential is None:
            raise ScramError("unknown user")
        try:
            proof = base64.b64decode(proof_attr, validate=True)
        except ValueError:
            raise ScramError("client-final message: proof is not base64") from None
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = self.mechanism.hmac(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("wrong proof length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature))
        if not hmac.compare_digest(self.mechanism.hash(client_key), credential.stored_key):
            raise ScramError("invalid credentials")
        server_signature = self.mechanism.hmac(credential.server_key, auth_message)
        return f"v={base64.b64encode(server_signature).decode()}".encode()
