"""`praha chaos --secure`, the pure parts: each principal's client settings, how they reach the
client processes, and that the declared ACLs let each workload principal do its work and no more."""
from __future__ import annotations

import stat

import pytest

from praha.chaos.access import ClientAccess, from_arguments, process_arguments
from praha.chaos.config import CampaignConfig
from praha.chaos.principals import GRANTS, Role
from praha.chaos.txn import CLIENTS, CTP_GROUP, OUTPUT_TOPIC, READERS_GROUP, command
from praha.security.acl import AclBinding, AclOperation, AuthorizerConfig, ResourceType, decide

SECURE = ClientAccess("198.18.0.11:9092", "chaos-reader", "s3cret", "/tmp/ca.pem")

T, G, X, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID, ResourceType.CLUSTER
R, W, D, I = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.IDEMPOTENT_WRITE
#: what each principal's clients do on a campaign's cluster (allowed), and what they must not (refused)
NEEDS = {
    Role.PRODUCER: ([(W, T, "chaos-data-0"), (W, T, "chaos-txn-1"), (D, T, "chaos-txn-0"), (W, X, "chaos-txn-p2"),
                     (D, X, "chaos-txn-p0"), (I, C, "kafka-cluster")],
                    [(R, T, "chaos-data-0"), (R, G, "chaos-group"), (W, T, "__consumer_offsets")]),
    Role.READER: ([(R, T, "chaos-data-1"), (R, T, OUTPUT_TOPIC), (D, T, "chaos-txn-0"), (R, G, "chaos-group"),
                   (R, G, READERS_GROUP), (R, G, "chaos-verifier"), (R, G, "chaos-txn-final"), (D, G, "chaos-group")],
                  [(W, T, "chaos-data-0"), (W, X, "chaos-txn-c0"), (I, C, "kafka-cluster"), (R, T, "other")]),
    Role.TRANSFORMER: ([(R, T, "chaos-txn-0"), (W, T, OUTPUT_TOPIC), (R, G, CTP_GROUP), (W, X, "chaos-txn-x0"),
                        (I, C, "kafka-cluster")],
                       [(R, T, "__transaction_state"), (R, G, "someone-else")]),
}


def _bindings() -> list[AclBinding]:
    return [
        AclBinding(g.pattern(), e) for role, grants in GRANTS.items() for g in grants for e in g.entries(role.value)
    ]


@pytest.mark.parametrize("role", sorted(NEEDS, key=lambda r: r.value))
def test_each_principal_may_do_its_work_and_no_more(role):
    bindings, config = _bindings(), AuthorizerConfig.parse("User:admin;User:broker-1", False)
    allowed, refused = NEEDS[role]
    for op, rtype, name in allowed:
        assert decide(bindings, config, f"User:{role.value}", "198.18.0.1", op, rtype, name), (op, rtype, name)
    for op, rtype, name in refused:
        assert not decide(bindings, config, f"User:{role.value}", "198.18.0.1", op, rtype, name), (op, rtype, name)


def test_every_workload_principal_has_grants_and_every_txn_client_a_principal():
    assert set(GRANTS) == set(Role) - {Role.ADMIN}
    assert {c.principal for c in CLIENTS} == {Role.PRODUCER, Role.READER, Role.TRANSFORMER}
    assert {c.principal for c in CLIENTS if c.writes} == {Role.PRODUCER, Role.TRANSFORMER}


def test_plain_access_adds_nothing_but_the_bootstrap():
    plain = ClientAccess("127.0.0.1:9092")
    assert plain.librdkafka() == {"bootstrap.servers": "127.0.0.1:9092"}
    assert plain.kafka_python() == {"bootstrap_servers": "127.0.0.1:9092"}
    assert plain.security().protocol == "PLAINTEXT"


def test_secure_access_speaks_sasl_ssl_with_scram_in_every_library():
    rd = SECURE.librdkafka()
    assert (rd["security.protocol"], rd["sasl.mechanism"], rd["sasl.username"], rd["sasl.password"],
            rd["ssl.ca.location"]) == ("SASL_SSL", "SCRAM-SHA-512", "chaos-reader", "s3cret", "/tmp/ca.pem")
    kp = SECURE.kafka_python()
    assert (kp["security_protocol"], kp["sasl_mechanism"], kp["sasl_plain_username"], kp["ssl_cafile"]) == (
        "SASL_SSL", "SCRAM-SHA-512", "chaos-reader", "/tmp/ca.pem")


def test_credentials_reach_a_client_process_in_a_private_file_not_its_command_line(tmp_path):
    args = process_arguments(SECURE, tmp_path / "access.json")
    assert "s3cret" not in " ".join(args)
    path = args[args.index("--access") + 1]
    assert stat.S_IMODE((tmp_path / "access.json").stat().st_mode) == 0o600
    assert from_arguments(args[args.index("--bootstrap") + 1], path) == SECURE
    assert process_arguments(ClientAccess("h:1"), tmp_path / "plain.json") == ["--bootstrap", "h:1"]
    assert not (tmp_path / "plain.json").exists()
    spec = next(c for c in CLIENTS if c.role == "ctp")
    cmd = command(spec, args, tmp_path / "x0.jsonl", 7)
    assert cmd[cmd.index("--access") + 1] == path


def test_secure_campaign_config():
    cfg = CampaignConfig(netns=True, secure=True, workload="txn")
    assert cfg.zk_acls
    assert "forged_zk_write" in cfg.effective_kinds()
    assert "forged_zk_write" not in CampaignConfig(netns=True).effective_kinds()
    with pytest.raises(ValueError, match="--secure already secures ZooKeeper"):
        CampaignConfig(secure=True, secure_zookeeper=True).validate()


def test_cli_takes_secure(capsys):
    from praha.cli.main import build_parser

    args = build_parser().parse_args(["chaos", "--netns", "--secure", "--faults", "1"])
    assert args.secure is True
