"""ssl.principal.mapping.rules (Kafka's SslPrincipalMapper cases) and JAAS config parsing."""
import pytest

from praha.errors import ConfigError
from praha.security.jaas import parse_jaas
from praha.security.principal import NoMappingRuleError, map_dn, parse_rules


@pytest.mark.parametrize(("rules", "dn", "name"), [
    ("DEFAULT", "CN=writer,OU=apps,O=praha", "CN=writer,OU=apps,O=praha"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=kafka1,OU=ServiceUsers,O=Org", "kafka1"),
    ("RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,DEFAULT", "CN=x,OU=Other,O=Org", "CN=x,OU=Other,O=Org"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*)$/$1@$2/L", "CN=Duke,OU=JavaSoft,O=Sun", "duke@javasoft"),
    ("RULE:^CN=(.*?),OU=(.*?),O=(.*)$/$1@$2/U", "CN=Duke,OU=JavaSoft,O=Sun", "DUKE@JAVASOFT"),
    ("RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L, DEFAULT", "CN=Host.Example,O=x", "host.example"),
])
def test_mapping(rules, dn, name):
    assert map_dn(parse_rules(rules), dn) == name


def test_no_rule_applies():
    with pytest.raises(NoMappingRuleError):
        map_dn(parse_rules("RULE:^CN=(.*),OU=x$/$1/"), "CN=a,OU=y")


@pytest.mark.parametrize("bad", ["RULE:^CN=(.*/$1/", "RULE:(/$1/", "NOPE"])
def test_bad_rules(bad):
    with pytest.raises(ConfigError):
        parse_rules(bad)


def test_jaas_plain():
    jaas = parse_jaas('org.apache.kafka.common.security.plain.PlainLoginModule required '
                      'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="a;l\\"ice";')
    assert jaas.username == "admin"
    assert jaas.password == "admin-secret"
    assert jaas.plain_users == {"admin": "admin-secret", "alice": 'a;l"ice'}


@pytest.mark.parametrize("bad", ["", "Module required username=\"a\"", "required x=1;"])
def test_jaas_bad(bad):
    with pytest.raises(ConfigError):
        parse_jaas(bad)
