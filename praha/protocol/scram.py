"""SCRAM-SHA-256 / SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka uses them: no channel
binding (gs2 header "n,,"), credentials stored as salt, stored key, server key, iterations.

The math and message formats, shared by the broker's SASL server (`praha.security`) and
the clients (inter-broker, admin tools):
  1. client-first  "n,,n=<user>,r=<client nonce>"
  2. server-first  "r=<client nonce><server nonce>,s=<salt b64>,i=<iterations>"
  3. client-final  "c=biws,r=<nonce>,p=<proof b64>"  (proof = ClientKey XOR ClientSignature)
  4. server-final  "v=<server signature b64>"
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import os
from dataclasses import dataclass
from enum import Enum

from praha.errors import ErrorCode, PrahaError

#: Kafka's bounds on SCRAM iterations (ScramMechanism.minIterations / a sane maximum)
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
#: base64 of the gs2 header "n,," (no channel binding, no authzid)
CHANNEL_BINDING = "biws"


class ScramMechanism(Enum):
    SHA_256 = ("SCRAM-SHA-256", "sha256", 1)
    SHA_512 = ("SCRAM-SHA-512", "sha512", 2)

    @property
    def wire_id(self) -> int:
        """The id in Describe/AlterUserScramCredentials (Kafka's ScramMechanism type)."""
        return self.value[2]

    @classmethod
    def by_wire_id(cls, wire_id: int) -> ScramMechanism | None:
        return next((m for m in cls if m.wire_id == wire_id), None)

    @property
    def mechanism_name(self) -> str:
        return self.value[0]

    @property
    def hash_name(self) -> str:
        return self.value[1]

    @classmethod
    def by_name(cls, name: str) -> ScramMechanism | None:
        return next((m for m in cls if m.mechanism_name == name), None)

    def hmac(self, key: bytes, msg: bytes) -> bytes:
        return hmac.new(key, msg, self.hash_name).digest()

    def hash(self, data: bytes) -> bytes:
        return hashlib.new(self.hash_name, data).digest()

    def salted_password(self, password: str, salt: bytes, iterations: int) -> bytes:
        return hashlib.pbkdf2_hmac(self.hash_name, password.encode(), salt, iterations)


class ScramError(PrahaError):
    """A malformed or failed SCRAM exchange (SASL_AUTHENTICATION_FAILED)."""

    code = ErrorCode.SASL_AUTHENTICATION_FAILED


@dataclass(frozen=True)
class ScramCredential:
    """What the server keeps per user and mechanism (never the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_password(cls, mechanism: ScramMechanism, password: str, iterations: int,
                      salt: bytes | None = None) -> ScramCredential:
        salt = os.urandom(32) if salt is None else salt
        return cls.from_salted_password(mechanism, mechanism.salted_password(password, salt, iterations), salt,
                                        iterations)

    @classmethod
    def from_salted_password(cls, mechanism: ScramMechanism, salted: bytes, salt: bytes,
                             iterations: int) -> ScramCredential:
        """What AlterUserScramCredentials sends: the client salted the password itself."""
        client_key = mechanism.hmac(salted, b"Client Key")
        return cls(salt, mechanism.hash(client_key), mechanism.hmac(salted, b"Server Key"), iterations)

    def to_config(self) -> str:
        """Kafka's `ScramCredentialUtils.credentialToString` (the `/config/users/<u>` value)."""
        b64 = base64.b64encode
        return (f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
                f"server_key={b64(self.server_key).decode()},iterations={self.iterations}")

    @classmethod
    def from_config(cls, text: str) -> ScramCredential:
        fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        try:
            return cls(base64.b64decode(fields["salt"]), base64.b64decode(fields["stored_key"]),
                       base64.b64decode(fields["server_key"]), int(fields["iterations"]))
        except (KeyError, ValueError) as e:
            raise ScramError(f"malformed SCRAM credential: {e}") from None


def parse_attributes(message: str) -> dict[str, str]:
    """"a=1,b=2" → {"a": "1", "b": "2"}: each attribute a single letter (RFC 5802 §5)."""
    out: dict[str, str] = {}
    for part in message.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"malformed SCRAM message {message!r}")
        out[part[0]] = part[2:]
    return out


def saslname_decode(name: str) -> str:
    return name.replace("=2C", ",").replace("=3D", "=")


def saslname_encode(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def new_nonce() -> str:
    return base64.b64encode(os.urandom(24)).decode().rstrip("=")


def client_proof(mechanism: ScramMechanism, salted: bytes, auth_message: bytes) -> bytes:
    client_key = mechanism.hmac(salted, b"Client Key")
    signature = mechanism.hmac(mechanism.hash(client_key), auth_message)
    return bytes(a ^ b for a, b in zip(client_key, signature))


class ScramClient:
    """The client's side of one exchange: `first()`, `final(server_first)`, `verify(server_final)`."""

    def __init__(self, mechanism: ScramMechanism, user: str, password: str, nonce: str | None = None):
        self.mechanism, self.user, self.password = mechanism, user, password
        self.nonce = nonce or new_nonce()
        self._client_first_bare = f"n={saslname_encode(user)},r={self.nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = parse_attributes(text)
        nonce, salt, iterations = attrs.get("r", ""), base64.b64decode(attrs.get("s", "")), int(attrs.get("i", "0"))
        if not nonce.startswith(self.nonce) or iterations < 1:
            raise ScramError("server-first message has a foreign nonce or no iterations")
        without_proof = f"c={CHANNEL_BINDING},r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        salted = self.mechanism.salted_password(self.password, salt, iterations)
        self._server_signature = self.mechanism.hmac(self.mechanism.hmac(salted, b"Server Key"), auth_message)
        proof = client_proof(self.mechanism, salted, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attrs = parse_attributes(server_final.decode())
        if "e" in attrs:
            raise ScramError(f"server refused: {attrs['e']}")
        if base64.b64decode(attrs.get("v", "")) != self._server_signature:
            raise ScramError("server signature does not verify")
