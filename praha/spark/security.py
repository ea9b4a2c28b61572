"""Security options of the praha data source: Spark's Kafka names (`kafka.security.protocol`,
`kafka.sasl.*`, `kafka.ssl.*`), checked on the driver and turned into what each client needs.

Two clients connect: praha's own wire client (reads, metadata, offsets: an `ssl.SSLContext`
and a SASL user/password, `ClientSecurity`) and librdkafka (the sink's producers: its own
property names). `Security` holds only strings, so it pickles to executors; each process
builds its SSL context once from it (`client_security`).

Secrets (passwords, the JAAS string, private keys) live in fields with `repr=False` and
never enter a message: errors name the option, not its value.
"""
from __future__ import annotations

import os
import re
import ssl
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from praha.protocol.client_security import ClientSecurity
from praha.spark.options import OptionError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: the Java login module each mechanism takes in `sasl.jaas.config`
LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
_REFUSED_MECHANISMS = {
    "GSSAPI": "Kerberos needs a JVM login context; praha's Python clients speak PLAIN and SCRAM only",
    "OAUTHBEARER": "OAuth tokens need a Java callback handler; use SCRAM-SHA-512 or PLAIN",
}
#: every `kafka.<name>` this module owns: consumed here, never passed to librdkafka as is
SECURITY_OPTIONS = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.jaas.config",
    "ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password", "ssl.truststore.certificates",
    "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.endpoint.identification.algorithm",
})
_JKS_MAGIC = b"\xfe\xed\xfe\xed"


@dataclass(frozen=True)
class Store:
    """A truststore or keystore: PEM text (from a file or inline), or a PKCS12 file."""

    option: str  # the option that named it, for messages
    kind: str  # "PEM" | "PKCS12"
    pem: str = field(default="", repr=False)  # PEM: certificates (and, in a keystore, the key)
    path: str = ""  # PKCS12: the file
    password: str = field(default="", repr=False)


@dataclass(frozen=True)
class Security:
    protocol: str = "PLAINTEXT"
    mechanism: str = ""
    username: str = ""
    password: str = field(default="", repr=False)
    truststore: Store | None = None
    keystore: Store | None = None
    key_password: str = field(default="", repr=False)
    verify_hostname: bool = True

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    def client_security(self) -> ClientSecurity:
        """What praha's wire client takes (the SSL context built once per process)."""
        if self.protocol == "PLAINTEXT":
            return ClientSecurity()
        with _LOCK:
            ctx = _CONTEXTS.get(self)
            if ctx is None and self.tls:
                ctx = _CONTEXTS[self] = ssl_context(self)
        return ClientSecurity(self.protocol, self.protocol, ctx, self.mechanism if self.sasl else "",
                              self.username, self.password)

    def librdkafka(self) -> dict[str, str]:
        """The same settings in librdkafka's names (the sink's producers, marker readers)."""
        if self.protocol == "PLAINTEXT":
            return {}
        out = {"security.protocol": self.protocol}
        if self.sasl:
            out.update({"sasl.mechanism": self.mechanism, "sasl.username": self.username,
                        "sasl.password": self.password})
        if self.tls:
            out["ssl.endpoint.identification.algorithm"] = "https" if self.verify_hostname else "none"
            if self.truststore is not None:
                out["ssl.ca.pem"] = _trusted_pem(self.truststore)
            if self.keystore is not None:
                if self.keystore.kind == "PKCS12":
                    out.update({"ssl.keystore.location": self.keystore.path,
                                "ssl.keystore.password": self.keystore.password})
                else:
                    certs, key = _split_pem(self.keystore.pem)
                    out.update({"ssl.certificate.pem": certs, "ssl.key.pem": key})
                    if self.key_password:
                        out["ssl.key.password"] = self.key_password
        return out


_LOCK = threading.Lock()
_CONTEXTS: dict[Security, ssl.SSLContext] = {}


# ------------------------------------------------------------------------------ parsing (pure)
_JAAS = re.compile(r"^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;?\s*$", re.S)
_JAAS_OPTION = re.compile(r'\s*([\w.]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|(\S+?))\s*(?=\s|$)', re.S)


def parse_jaas(text: str, mechanism: str) -> tuple[str, str]:
    """(username, password) of a Java login-module string such as
    `org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";`."""
    name = "kafka.sasl.jaas.config"
    m = _JAAS.match(text)
    if m is None:
        raise OptionError(name, "is not a JAAS login-module string (expected '<LoginModule class> required "
                          "username=\"...\" password=\"...\";')")
    module, rest = m.group(1), m.group(3).rstrip(";").strip()
    expected = LOGIN_MODULES[mechanism]
    if module != expected:
        raise OptionError(name, f"names login module {module}, but kafka.sasl.mechanism={mechanism} needs {expected}")
    values: dict[str, str] = {}
    pos = 0
    while pos < len(rest):
        om = _JAAS_OPTION.match(rest, pos)
        if om is None:
            raise OptionError(name, f"cannot read the login module's options after position {pos} "
                              "(expected key=\"value\" pairs)")
        quoted, bare = om.group(2), om.group(3)
        values[om.group(1)] = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        pos = om.end()
    for key in ("username", "password"):
        if not values.get(key):
            raise OptionError(name, f"has no {key}=\"...\" (the login module needs a username and a password)")
    return values["username"], values["password"]


def parse_security(opts: Mapping[str, str]) -> Security:
    """`opts`: the data source options, names lower-cased. Checks files now (on the driver),
    so a missing truststore or a wrong store password fails before any task runs."""
    def get(name: str) -> str | None:
        v = opts.get(f"kafka.{name}")
        return None if v is None else str(v)

    protocol = (get("security.protocol") or "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise OptionError("kafka.security.protocol", f"must be one of {', '.join(PROTOCOLS)}, got {protocol!r}")
    mechanism, username, password = "", "", ""
    if protocol.startswith("SASL_"):
        mechanism = (get("sasl.mechanism") or "GSSAPI").strip().upper()
        if mechanism in _REFUSED_MECHANISMS:
            raise OptionError(
                "kafka.sasl.mechanism",
                f"{mechanism} is not supported: {_REFUSED_MECHANISMS[mechanism]}"
                + (" (GSSAPI is Kafka's default: set kafka.sasl.mechanism)" if mechanism == "GSSAPI" else ""),
            )
        if mechanism not in MECHANISMS:
            raise OptionError("kafka.sasl.mechanism", f"must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
        jaas = get("sasl.jaas.config")
        if not jaas:
            raise OptionError("kafka.sasl.jaas.config", f"is required with kafka.security.protocol={protocol} "
                              f"(e.g. '{LOGIN_MODULES[mechanism]} required username=\"...\" password=\"...\";')")
        username, password = parse_jaas(jaas, mechanism)
    truststore = keystore = None
    key_password = get("ssl.key.password") or ""
    verify = True
    if protocol in ("SSL", "SASL_SSL"):
        algorithm = (get("ssl.endpoint.identification.algorithm") or "https").strip().lower()
        if algorithm not in ("https", ""):
            raise OptionError("kafka.ssl.endpoint.identification.algorithm",
                              f"must be https (check the broker's host name) or empty (do not), got {algorithm!r}")
        verify = algorithm == "https"
        truststore = _truststore(get)
        keystore = _keystore(get)
    return Security(protocol, mechanism, username, password, truststore, keystore, key_password, verify)


def _read_store_file(option: str, location: str) -> bytes:
    path = Path(location)
    if not path.is_file():
        raise OptionError(option, f"file {location} does not exist or is not a file (on the driver)")
    try:
        return path.read_bytes()
    except OSError as e:
        raise OptionError(option, f"cannot read {location}: {e.strerror}") from None


Getter = Callable[[str], "str | None"]


def _store(get: Getter, which: str) -> tuple[str, str, bytes] | None:
    """(type, location, content) of `kafka.ssl.<which>store.*`; type from the option or the content."""
    loc_opt, type_opt = f"kafka.ssl.{which}store.location", f"kafka.ssl.{which}store.type"
    location = get(f"ssl.{which}store.location")
    kind = (get(f"ssl.{which}store.type") or "").strip().upper()
    if kind and kind not in ("PEM", "PKCS12", "JKS"):
        raise OptionError(type_opt, f"must be PEM or PKCS12, got {kind!r}")
    if not location:
        return None
    data = _read_store_file(loc_opt, location)
    if not kind:
        kind = "JKS" if data[:4] == _JKS_MAGIC else "PEM" if b"-----BEGIN" in data else "PKCS12"
    if kind == "JKS":
        raise OptionError(type_opt if get(f"ssl.{which}store.type") else loc_opt,
                          f"JKS {which}stores cannot be read outside a JVM; convert it once with "
                          f"`keytool -importkeystore -srckeystore {location} -destkeystore {which}store.p12 "
                          f"-deststoretype PKCS12`, then set {type_opt}=PKCS12 (or export PEM and set it to PEM)")
    return kind, location, data


def _file_store(get: Getter, which: str, pem_problem: Callable[[str], str | None]) -> Store | None:
    """The store a `kafka.ssl.<which>store.location` names, checked now: PEM content by
    `pem_problem` (what is wrong with it, or None), a PKCS12 file by opening it."""
    found = _store(get, which)
    if found is None:
        return None
    kind, location, data = found
    option = f"kafka.ssl.{which}store.location"
    if kind == "PEM":
        text = data.decode("ascii", "replace")
        problem = pem_problem(text)
        if problem:
            raise OptionError(option, f"{location} {problem}")
        return Store(option, "PEM", pem=text)
    password = get(f"ssl.{which}store.password") or ""
    _pkcs12(data, password, f"kafka.ssl.{which}store.password", location)  # a wrong password fails now
    return Store(option, "PKCS12", path=location, password=password)


def _truststore(get: Getter) -> Store | None:
    inline = get("ssl.truststore.certificates")
    if inline:
        if "-----BEGIN CERTIFICATE-----" not in inline:
            raise OptionError("kafka.ssl.truststore.certificates", "must hold PEM certificates")
        return Store("kafka.ssl.truststore.certificates", "PEM", pem=inline)
    return _file_store(get, "trust", lambda text: None if "-----BEGIN CERTIFICATE-----" in text
                       else "holds no PEM certificate")


def _keystore(get: Getter) -> Store | None:
    chain, key = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    if chain or key:
        if not (chain and key):
            raise OptionError("kafka.ssl.keystore.key" if chain else "kafka.ssl.keystore.certificate.chain",
                              "is needed too: an inline PEM keystore is a certificate chain and its key")
        return Store("kafka.ssl.keystore.certificate.chain", "PEM", pem=f"{chain}\n{key}")
    return _file_store(get, "key", lambda text: None if all(_split_pem(text))
                       else "must hold a certificate chain and a private key (PEM)")


def _pkcs12(data: bytes, password: str, option: str, location: str) -> tuple[object, object, list[object]]:
    from cryptography.hazmat.primitives.serialization import pkcs12

    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError:
        raise OptionError(option, f"does not open {location} (wrong password, or not a PKCS12 file)") from None
    return key, cert, list(extra)


def _split_pem(text: str) -> tuple[str, str]:
    """(certificate blocks, private-key block) of PEM text."""
    full = re.findall(r"(-----BEGIN ([A-Z ]+)-----.*?-----END \2-----)", text, re.S)
    certs = "\n".join(b for b, kind in full if kind == "CERTIFICATE")
    keys = [b for b, kind in full if "PRIVATE KEY" in kind]
    return certs, (keys[0] if keys else "")


def _trusted_pem(store: Store) -> str:
    if store.kind == "PEM":
        return store.pem
    from cryptography.hazmat.primitives.serialization import Encoding

    data = Path(store.path).read_bytes()
    _, cert, extra = _pkcs12(data, store.password, "kafka.ssl.truststore.password", store.path)
    certs = ([cert] if cert is not None else []) + extra
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)  # type: ignore[attr-defined]


# ------------------------------------------------------------------------------ SSL context
def ssl_context(sec: Security) -> ssl.SSLContext:
    """TLS settings of the wire client: trust, client certificate, host-name check."""
    ctx = ssl.create_default_context()
    if sec.truststore is not None:
        ctx.load_verify_locations(cadata=_trusted_pem(sec.truststore))
    ctx.check_hostname = sec.verify_hostname
    if sec.keystore is not None:
        ks = sec.keystore
        if ks.kind == "PKCS12":
            from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

            key, cert, extra = _pkcs12(Path(ks.path).read_bytes(), ks.password, "kafka.ssl.keystore.password", ks.path)
            pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()  # type: ignore[attr-defined]
            pem += "".join(c.public_bytes(Encoding.PEM).decode() for c in [cert, *extra] if c is not None)  # type: ignore[attr-defined]
            password = None
        else:
            pem, password = ks.pem, sec.key_password or None
        _load_chain(ctx, pem, password)
    return ctx


def _load_chain(ctx: ssl.SSLContext, pem: str, password: str | None) -> None:
    """`load_cert_chain` reads files only: a private file that lives for the call."""
    fd, path = tempfile.mkstemp(prefix="praha-key-", suffix=".pem")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(pem)
        try:
            ctx.load_cert_chain(path, password=password)
        except ssl.SSLError:
            raise OptionError("kafka.ssl.keystore.location", "its key and certificate cannot be loaded "
                              "(wrong kafka.ssl.key.password, or they do not match)") from None
    finally:
        os.remove(path)
