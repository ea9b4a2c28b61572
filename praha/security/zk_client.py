"""How a broker or a tool reaches ZooKeeper, from Kafka's settings (`ZkAuth`).

The same keys serve a broker's `server.properties` and a tool's ZooKeeper client file
(Kafka's `--zk-tls-config-file`; a local secure cluster keeps one in
`<dir>/security/zookeeper-client.properties`):

  - SASL: the JAAS file named by `java.security.auth.login.config` (else the JVM option
    `-Djava.security.auth.login.config=...` in `KAFKA_OPTS`, as Kafka's scripts pass it),
    section `zookeeper.sasl.clientconfig` (default `Client`), with a DigestLoginModule's
    `username`/`password` (DIGEST-MD5, what Kafka brokers use without Kerberos);
  - the digest scheme: `praha.zookeeper.digest=user:password` (praha's own);
  - `zookeeper.set.acl`;
  - TLS: `zookeeper.ssl.client.enable`, `zookeeper.clientCnxnSocket` (Netty, if given),
    `zookeeper.ssl.truststore.location` (PEM), `zookeeper.ssl.keystore.location` (PEM key and
    chain, optional), `zookeeper.ssl.endpoint.identification.algorithm` (HTTPS or empty).
"""
from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from pathlib import Path

from praha.errors import ConfigError
from praha.security.jaas import parse_jaas
from praha.zk.auth import ZkAuth, ZkTls

JAAS_PROPERTY = "java.security.auth.login.config"
NETTY_SOCKET = "org.apache.zookeeper.ClientCnxnSocketNetty"
DIGEST_MODULE = "org.apache.zookeeper.server.auth.DigestLoginModule"
_SECTION = re.compile(r"(?P<name>[\w.\-]+)\s*\{(?P<body>.*?)\}\s*;", re.S)


def jvm_options(environ: Mapping[str, str]) -> dict[str, str]:
    """The `-Dkey=value` options in KAFKA_OPTS."""
    out = {}
    for word in shlex.split(environ.get("KAFKA_OPTS", "")):
        if word.startswith("-D") and "=" in word:
            k, _, v = word[2:].partition("=")
            out[k] = v
    return out


def jaas_client_login(path: str, section: str) -> tuple[str, str] | None:
    """(username, password) of `section` in the JAAS file at `path`; None without that section."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ConfigError(f"{JAAS_PROPERTY}: cannot read {path}: {e.strerror}") from None
    for m in _SECTION.finditer(text):
        if m["name"] != section:
            continue
        login = parse_jaas(m["body"].strip(), f"{path} ({section})")
        if login.module != DIGEST_MODULE or not login.username:
            raise ConfigError(f"{path} ({section}): praha logs in to ZooKeeper with SASL DIGEST-MD5 "
                              f"({DIGEST_MODULE} with username and password), not {login.module}")
        return login.username, login.password
    return None


def zk_auth_from_properties(props: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> ZkAuth:
    """A `ZkAuth` from Kafka's ZooKeeper client settings (see the module docstring)."""
    jvm = jvm_options(environ)
    jaas = props.get(JAAS_PROPERTY) or jvm.get(JAAS_PROPERTY, "")
    section = props.get("zookeeper.sasl.clientconfig") or jvm.get("zookeeper.sasl.clientconfig") or "Client"
    login = jaas_client_login(jaas, section) if jaas and jvm.get("zookeeper.sasl.client", "true") == "true" else None
    tls = None
    if props.get("zookeeper.ssl.client.enable", "false").strip().lower() == "true":
        socket = props.get("zookeeper.clientCnxnSocket", "").strip()
        if socket and socket != NETTY_SOCKET:
            raise ConfigError(f"zookeeper.clientCnxnSocket: TLS to ZooKeeper needs {NETTY_SOCKET}, not {socket}")
        for kind in ("keystore", "truststore"):
            if props.get(f"zookeeper.ssl.{kind}.type", "PEM").strip().upper() not in ("PEM", ""):
                raise ConfigError(f"zookeeper.ssl.{kind}.type: praha reads PEM files only")
        truststore = props.get("zookeeper.ssl.truststore.location", "").strip()
        if not truststore:
            raise ConfigError("zookeeper.ssl.client.enable=true needs zookeeper.ssl.truststore.location "
                              "(the CA that signed ZooKeeper's certificate, PEM)")
        algorithm = props.get("zookeeper.ssl.endpoint.identification.algorithm", "HTTPS").strip().upper()
        tls = ZkTls(truststore, props.get("zookeeper.ssl.keystore.location", "").strip(), algorithm == "HTTPS")
    return ZkAuth(digest=props.get("praha.zookeeper.digest", "").strip(),
                  set_acl=props.get("zookeeper.set.acl", "false").strip().lower() == "true",
                  sasl_user=login[0] if login else "", sasl_password=login[1] if login else "", tls=tls)


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file's `key=value` lines (comments and blanks skipped)."""
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read ZooKeeper client config {path}: {e.strerror}") from None
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "!")) and "=" in line:
            k, _, v = line.partition("=")
            out[k.strip()] = v.strip()
    return out


def zk_auth_for_tool(config_file: Path | None, environ: Mapping[str, str] = os.environ) -> ZkAuth:
    """A tool's ZooKeeper access: its client config file if it has one, else the environment
    (`KAFKA_OPTS`'s JAAS file, `PRAHA_ZOOKEEPER_DIGEST`)."""
    if config_file is not None:
        return zk_auth_from_properties(read_properties(config_file), environ)
    env = ZkAuth.from_environment()
    props = {"praha.zookeeper.digest": env.digest, "zookeeper.set.acl": str(env.set_acl).lower()}
    auth = zk_auth_from_properties(props, environ)
    if auth.sasl_user and not auth.set_acl:  # logged in: what it creates is protected, as the brokers' znodes
        auth = ZkAuth(auth.digest, True, auth.sasl_user, auth.sasl_password, auth.tls)
    return auth


def open_zookeeper_warning(listener_protocols: list[str], auth: ZkAuth) -> str | None:
    """The start-up warning of a broker that secures its clients but not its ZooKeeper: anyone
    who reaches ZooKeeper could rewrite the cluster (ACLs, credentials, topics) regardless."""
    if not listener_protocols or "PLAINTEXT" in listener_protocols:
        return None
    if auth.authenticated and auth.set_acl:
        return None
    gaps = [what for what, ok in (("unauthenticated", auth.authenticated), ("without znode ACLs", auth.set_acl))
            if not ok]
    return (f"all client listeners are secured ({', '.join(sorted(set(listener_protocols)))}) but ZooKeeper access is "
            f"{', '.join(gaps)}: anyone who can reach ZooKeeper can change this cluster's topics, ACLs and "
            "credentials; set zookeeper.set.acl=true with a JAAS Client section (docs/security.md)")
