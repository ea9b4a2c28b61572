"""The JAAS-style `sasl.jaas.config` value Kafka brokers read per listener and mechanism:

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";

`username`/`password` are the broker's own credentials (inter-broker); `user_<name>` are
the PLAIN users the listener accepts.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from praha.errors import ConfigError

_HEAD = re.compile(r"^\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)\s*")
_OPTION = re.compile(r'\s*(?P<key>[\w.\-]+)\s*=\s*(?:"(?P<quoted>(?:\\.|[^"\\])*)"|(?P<bare>[^\s;]+))\s*')


@dataclass(frozen=True)
class JaasConfig:
    module: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def username(self) -> str:
        return self.options.get("username", "")

    @property
    def password(self) -> str:
        return self.options.get("password", "")

    @property
    def plain_users(self) -> dict[str, str]:
        return {k[len("user_"):]: v for k, v in self.options.items() if k.startswith("user_")}


def parse_jaas(text: str, key: str = "sasl.jaas.config") -> JaasConfig:
    m = _HEAD.match(text)
    if m is None:
        raise ConfigError(f"{key}: expected '<LoginModule> required key=\"value\" ...;'")
    options: dict[str, str] = {}
    pos = m.end()
    while pos < len(text) and text[pos] != ";":
        o = _OPTION.match(text, pos)
        if o is None or o.end() == pos:
            raise ConfigError(f"{key}: cannot parse {text[pos:]!r}")
        value = o["quoted"] if o["quoted"] is not None else o["bare"]
        options[o["key"]] = re.sub(r"\\(.)", r"\1", value)
        pos = o.end()
    if pos >= len(text):
        raise ConfigError(f"{key}: must end with ';'")
    return JaasConfig(m["module"], options)
