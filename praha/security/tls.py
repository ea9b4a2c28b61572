"""TLS for a listener, and for a broker's own connections to other brokers, with Python's `ssl`.

Kafka's PEM key stores: `ssl.keystore.location` (one PEM file: private key and certificate
chain, the key optionally encrypted with `ssl.key.password`) or the PEM text itself in
`ssl.keystore.certificate.chain` + `ssl.keystore.key`; trust from
`ssl.truststore.location` (a PEM file of CA certificates) or `ssl.truststore.certificates`.
`ssl.client.auth` none/requested/required; `ssl.enabled.protocols` TLSv1.2/TLSv1.3;
`ssl.cipher.suites` (Kafka's IANA names or OpenSSL's; TLS 1.3 suites are OpenSSL's fixed
set); `ssl.endpoint.identification.algorithm=https` checks the peer's host name (clients,
inter-broker).
"""
from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from praha.errors import ConfigError

_PROTOCOLS = {"TLSV1.2": ssl.TLSVersion.TLSv1_2, "TLSV1.3": ssl.TLSVersion.TLSv1_3}


@dataclass(frozen=True)
class SslSettings:
    """One listener's (or the inter-broker client's) `ssl.*` settings."""

    keystore_type: str = "PEM"
    keystore_location: str = ""
    keystore_password: str = ""
    key_password: str = ""
    keystore_certificate_chain: str = ""
    keystore_key: str = ""
    truststore_type: str = "PEM"
    truststore_location: str = ""
    truststore_certificates: str = ""
    client_auth: str = "none"
    enabled_protocols: str = "TLSv1.2,TLSv1.3"
    cipher_suites: str = ""
    endpoint_identification_algorithm: str = "https"

    @classmethod
    def from_lookup(cls, value: Callable[[str], str]) -> SslSettings:
        """Built from `value(<kafka key>)` (a listener's view of the broker's settings)."""
        return cls(**{name: value("ssl." + name.replace("_", ".")) for name in cls.__dataclass_fields__})


def server_context(s: SslSettings) -> ssl.SSLContext:
    """A listener's context: its key and certificate, the trust for client certificates."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _common(ctx, s)
    if not (s.keystore_location or s.keystore_certificate_chain):
        raise ConfigError("an SSL listener needs ssl.keystore.location or ssl.keystore.certificate.chain")
    _load_keystore(ctx, s)
    auth = s.client_auth.strip().lower()
    if auth in ("required", "requested"):
        if not (s.truststore_location or s.truststore_certificates):
            raise ConfigError(f"ssl.client.auth={auth} needs ssl.truststore.location or ssl.truststore.certificates")
        ctx.verify_mode = ssl.CERT_REQUIRED if auth == "required" else ssl.CERT_OPTIONAL
    else:
        ctx.verify_mode = ssl.CERT_NONE
    if s.truststore_location or s.truststore_certificates:
        _load_truststore(ctx, s)
    return ctx


def client_context(s: SslSettings) -> ssl.SSLContext:
    """A client's context (inter-broker): verify the server against the trust store (the
    system's if none), its host name when `https`; present our certificate if we have one."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _common(ctx, s)
    ctx.check_hostname = s.endpoint_identification_algorithm.strip().lower() == "https"
    ctx.verify_mode = ssl.CERT_REQUIRED
    if s.truststore_location or s.truststore_certificates:
        _load_truststore(ctx, s)
    else:
        ctx.load_default_certs()
    if s.keystore_location or s.keystore_certificate_chain:
        _load_keystore(ctx, s)
    return ctx


def peer_dn(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str | None:
    """The client certificate's subject in RFC 2253 form ("CN=a,OU=b,O=c"), None without one."""
    if ssl_object is None:
        return None
    der = ssl_object.getpeercert(binary_form=True)
    if not der:
        return None
    from cryptography import x509  # only mutual TLS needs it: plaintext brokers skip the import

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


def _common(ctx: ssl.SSLContext, s: SslSettings) -> None:
    if s.keystore_type.strip().upper() != "PEM" or s.truststore_type.strip().upper() != "PEM":
        raise ConfigError("ssl.keystore.type and ssl.truststore.type: praha reads PEM only")
    wanted = [p.strip().upper() for p in s.enabled_protocols.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in _PROTOCOLS]
    if unknown or not wanted:
        raise ConfigError(f"ssl.enabled.protocols: {', '.join(unknown) or 'none'} not supported (TLSv1.2, TLSv1.3)")
    versions = sorted(_PROTOCOLS[p] for p in wanted)
    ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    suites = [openssl_cipher_name(c.strip()) for c in s.cipher_suites.split(",") if c.strip()]
    suites = [c for c in suites if c]
    if suites:
        try:
            ctx.set_ciphers(":".join(suites))
        except ssl.SSLError:
            raise ConfigError(f"ssl.cipher.suites: none of {s.cipher_suites!r} is available") from None


def openssl_cipher_name(name: str) -> str:
    """Kafka's (IANA) suite name → OpenSSL's: TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 →
    ECDHE-RSA-AES128-GCM-SHA256. TLS 1.3 suites ("TLS_AES_128_GCM_SHA256") give ""."""
    if not name.startswith("TLS_"):
        return name
    if "_WITH_" not in name:
        return ""  # a TLS 1.3 suite: OpenSSL enables those itself
    kx, cipher = name[4:].split("_WITH_", 1)
    cipher = (
        cipher.replace("AES_128", "AES128")
        .replace("AES_256", "AES256")
        .replace("CHACHA20_POLY1305", "CHACHA20-POLY1305")
    )
    parts = ([] if kx == "RSA" else [kx.replace("_", "-")]) + [cipher.replace("_", "-")]
    return "-".join(parts)


def _load_keystore(ctx: ssl.SSLContext, s: SslSettings) -> None:
    password = s.key_password or s.keystore_password or None
    try:
        if s.keystore_location:
            ctx.load_cert_chain(s.keystore_location, password=password)
            return
        if not s.keystore_key:
            raise ConfigError("ssl.keystore.certificate.chain needs ssl.keystore.key")
        with tempfile.TemporaryDirectory() as d:  # ssl loads keys from files only
            path = os.path.join(d, "keystore.pem")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(_pem(s.keystore_key) + "\n" + _pem(s.keystore_certificate_chain) + "\n")
            ctx.load_cert_chain(path, password=password)
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"ssl.keystore: cannot load the key and certificate: {e}") from None


def _load_truststore(ctx: ssl.SSLContext, s: SslSettings) -> None:
    try:
        if s.truststore_location:
            ctx.load_verify_locations(cafile=s.truststore_location)
        else:
            ctx.load_verify_locations(cadata=_pem(s.truststore_certificates))
    except (OSError, ssl.SSLError) as e:
        raise ConfigError(f"ssl.truststore: cannot load the certificates: {e}") from None


def _pem(text: str) -> str:
    """PEM given in a properties file may have its line breaks escaped as \\n."""
    return text.replace("\\n", "\n")
