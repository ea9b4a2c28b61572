"""A Kafka client's security from its properties, as Kafka's tools read `--command-config`
(and the console tools' `--producer.config`/`--consumer.config`): `security.protocol`,
`sasl.mechanism`, `sasl.jaas.config` (PLAIN or SCRAM login module with `username` and
`password`), `ssl.truststore.location`/`ssl.truststore.certificates` (PEM),
`ssl.keystore.*` for a client certificate, `ssl.endpoint.identification.algorithm`.

The properties file format is Java's: `key=value` or `key: value`, `#`/`!` comments,
a trailing backslash continues a line.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from praha.errors import ConfigError
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.security.jaas import parse_jaas
from praha.security.tls import SslSettings, client_context

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def parse_properties(text: str) -> dict[str, str]:
    """Java properties text → dict (the subset real client configs use)."""
    out: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        key, value = _split(logical)
        out[key] = value
        logical = ""
    if logical:
        key, value = _split(logical)
        out[key] = value
    return out


def _split(line: str) -> tuple[str, str]:
    cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
    if cut < 0:
        return line.strip(), ""
    return line[:cut].strip(), line[cut + 1:].strip()


def read_properties(path: str | Path) -> dict[str, str]:
    try:
        return parse_properties(Path(path).read_text())
    except OSError as e:
        raise ConfigError(f"cannot read the properties file {path}: {e.strerror or e}") from None


def client_security(props: Mapping[str, str]) -> ClientSecurity:
    """The ClientSecurity praha's wire clients use for these client properties."""
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise ConfigError(f"Invalid value {props.get('security.protocol')} for configuration security.protocol: "
                          f"String must be one of: {', '.join(PROTOCOLS)}")
    if protocol == "PLAINTEXT":
        return PLAINTEXT
    ctx = None
    if protocol.endswith("SSL"):
        settings = SslSettings.from_lookup(lambda key: props.get(key, _SSL_DEFAULTS.get(key, "")))
        ctx = client_context(settings)
    mechanism, username, password = "", "", ""
    if protocol.startswith("SASL_"):
        mechanism = props.get("sasl.mechanism", "GSSAPI").strip().upper()
        jaas_text = props.get("sasl.jaas.config", "")
        if not jaas_text:
            raise ConfigError(f"security.protocol={protocol} needs sasl.jaas.config (a login module with "
                              "username and password)")
        jaas = parse_jaas(jaas_text)
        username, password = jaas.username, jaas.password
    return ClientSecurity(protocol, protocol, ctx, mechanism, username, password)


#: SslSettings' defaults for a client (no listener settings around it)
_SSL_DEFAULTS = {f"ssl.{name.replace('_', '.')}": str(f.default)
                 for name, f in SslSettings.__dataclass_fields__.items()}


def kafka_python_settings(props: Mapping[str, str]) -> dict[str, object]:
    """kafka-python's keyword arguments for the same properties (the console tools)."""
    security = client_security(props)
    out: dict[str, object] = {"security_protocol": security.protocol}
    if security.ssl_context is not None:
        out["ssl_context"] = security.ssl_context
    if security.sasl_mechanism:
        out.update(sasl_mechanism=security.sasl_mechanism, sasl_plain_username=security.username,
                   sasl_plain_password=security.password)
    return out
