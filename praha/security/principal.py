"""`ssl.principal.mapping.rules`: a client certificate's distinguished name → a user name.

Kafka's `SslPrincipalMapper`: a comma-separated list of `RULE:pattern/replacement/[LU]`
and `DEFAULT`, tried in order; the first rule whose pattern matches the whole DN (in
RFC 2253 form, "CN=writer,OU=apps,O=praha") gives the name (`$1` refers to a group;
`L`/`U` fold the case); `DEFAULT` keeps the DN. No rule matching is an authentication
failure.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from praha.errors import ConfigError, ErrorCode, PrahaError

_RULE = re.compile(r"\s*(?:(?P<default>DEFAULT)|RULE:(?P<pattern>(?:\\.|[^\\/])*)/(?P<replacement>(?:\\.|[^\\/])*)"
                   r"/(?P<case>[LU]?)[^,]*?)\s*(?:,|$)")


class NoMappingRuleError(PrahaError):
    """No rule maps this distinguished name: the client is not authenticated."""

    def __init__(self, dn: str):
        super().__init__(f"no ssl.principal.mapping.rules rule applies to {dn!r}", ErrorCode.SASL_AUTHENTICATION_FAILED)


@dataclass(frozen=True)
class MappingRule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        m = self.pattern.fullmatch(dn)
        if m is None:
            return None
        name = m.expand(re.sub(r"\$(\d)", r"\\\1", self.replacement))
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


def parse_rules(text: str) -> tuple[MappingRule, ...]:
    """Parse the setting; ConfigError naming it when malformed."""
    rules: list[MappingRule] = []
    text = text.strip() or "DEFAULT"
    pos = 0
    while pos < len(text):
        m = _RULE.match(text, pos)
        if m is None or m.end() == pos:
            raise ConfigError(f"ssl.principal.mapping.rules: cannot parse {text[pos:]!r}")
        if m["default"]:
            rules.append(MappingRule(None))
        else:
            try:
                pattern = re.compile(m["pattern"])
            except re.error as e:
                raise ConfigError(f"ssl.principal.mapping.rules: bad pattern {m['pattern']!r}: {e}") from None
            rules.append(MappingRule(pattern, m["replacement"], m["case"]))
        pos = m.end()
    return tuple(rules)


def map_dn(rules: tuple[MappingRule, ...], dn: str) -> str:
    """The user name for `dn` (NoMappingRuleError when no rule applies)."""
    for rule in rules:
        name = rule.apply(dn)
        if name is not None:
            return name
    raise NoMappingRuleError(dn)
