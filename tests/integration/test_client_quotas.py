"""Client quotas (issue 12): DescribeClientQuotas / AlterClientQuotas sent by kafka-python
(its own request classes and network client: neither confluent-kafka 2.16 nor kafka-python
3.0 has an admin method for them), stored as Kafka stores them, and the same quotas through
`praha configs --entity-type clients|users`; bad input refused with Kafka's error and
nothing written; and a 1 MB/s producer quota enforced on one client id while another
client id on the same broker is not slowed; the same for a consumer's fetch rate."""
from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.protocol.admin import AlterClientQuotasRequest, DescribeClientQuotasRequest
from kafka.protocol.metadata import MetadataRequest

from praha.common import ReplicaAssignment, TopicAssignment
from praha.errors import ErrorCode
from praha.protocol.client import BrokerConnection
from praha.testing.cluster import scrape_metrics, wait_for
from praha.zk import znodes as zn

pytestmark = pytest.mark.integration

_E = AlterClientQuotasRequest.EntryData
_C = DescribeClientQuotasRequest.ComponentData


def send(admin: KafkaAdminClient, request):
    return admin._manager.run(admin._manager.send, request)


def alter(admin: KafkaAdminClient, entries: list[tuple[dict[str, str | None], list[tuple[str, float | None]]]],
          validate_only: bool = False) -> list[tuple[int, str | None]]:
    """[(entity {type: name or None}, [(key, value or None to remove)])] → [(error code, message)]."""
    req = AlterClientQuotasRequest(validate_only=validate_only, entries=[
        _E(entity=[_E.EntityData(entity_type=k, entity_name=n) for k, n in entity.items()],
           ops=[_E.OpData(key=key, value=0.0 if value is None else value, remove=value is None)
                for key, value in ops])
        for entity, ops in entries])
    return [(e.error_code, e.error_message) for e in send(admin, req).entries]


def describe(admin: KafkaAdminClient, components: list[tuple[str, int, str | None]] = (), strict: bool = False):
    resp = send(admin, DescribeClientQuotasRequest(
        components=[_C(entity_type=t, match_type=m, match=n) for t, m, n in components], strict=strict))
    if resp.error_code:
        return resp.error_code, resp.error_message
    return {tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)):
            {v.key: v.value for v in entry.values} for entry in resp.entries}


def quota_znodes(store) -> dict[str, object]:
    """Every znode under /config/clients and /config/users with its data, and the notices."""
    out: dict[str, object] = {}
    for root in (zn.CONFIG_CLIENTS_PATH, zn.CONFIG_USERS_PATH):
        stack = [root]
        while stack:
            path = stack.pop()
            got = store.get_data(path)
            out[path] = got[0] if got else None
            stack += [f"{path}/{c}" for c in store.get_children(path) or []]
    out["notices"] = sorted(store.get_children(zn.CONFIG_CHANGES_PATH) or [])
    return out


def test_quotas_through_kafka_python_and_praha_configs_and_bad_input(make_cluster, zk_store, cli):
    cluster = make_cluster(1)
    d = ["--dir", cluster.root]
    broker = cluster.load().brokers[1]
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{broker.port}", client_id="quota-admin")
    try:
        assert alter(admin, [
            ({"client-id": "c1"}, [("producer_byte_rate", 1048576.0)]),
            ({"user": "alice"}, [("consumer_byte_rate", 2e6), ("request_percentage", 50.5)]),
            ({"user": "alice", "client-id": None}, [("producer_byte_rate", 3000.0)]),
            ({"client-id": None}, [("consumer_byte_rate", 5e6)]),
            ({"user": "bob smith", "client-id": "c/1"}, [("controller_mutation_rate", 10.0)]),
        ]) == [(0, None)] * 5
        # stored as Kafka stores them: sanitized names, <default>, v1 config, v2 notices
        assert zn.decode_config(zk_store.get_data("/config/clients/c1")[0]) == {"producer_byte_rate": "1048576"}
        assert zn.decode_config(zk_store.get_data("/config/users/alice")[0]) == \
            {"consumer_byte_rate": "2000000", "request_percentage": "50.5"}
        assert zn.decode_config(zk_store.get_data("/config/users/alice/clients/<default>")[0]) == \
            {"producer_byte_rate": "3000"}
        assert zk_store.get_data("/config/users/bob%20smith/clients/c%2F1") is not None
        notices = [json.loads(zk_store.get_data(f"{zn.CONFIG_CHANGES_PATH}/{n}")[0])
                   for n in sorted(zk_store.get_children(zn.CONFIG_CHANGES_PATH))]
        assert {"version": 2, "entity_path": "users/alice/clients/<default>"} in notices
        assert {"version": 2, "entity_path": "clients/<default>"} in notices
        wait_for(lambda: scrape_metrics(broker.actual_metrics_port).get("praha_broker_client_quota_entities") == 4,
                 30, what="the broker applied the quotas (controller_mutation_rate is stored, not enforced)")

        everything = describe(admin)
        assert everything == {
            (("client-id", "c1"),): {"producer_byte_rate": 1048576.0},
            (("user", "alice"),): {"consumer_byte_rate": 2e6, "request_percentage": 50.5},
            (("client-id", None), ("user", "alice")): {"producer_byte_rate": 3000.0},
            (("client-id", None),): {"consumer_byte_rate": 5e6},
            (("client-id", "c/1"), ("user", "bob smith")): {"controller_mutation_rate": 10.0},
        }
        assert set(describe(admin, [("user", 0, "alice")])) == {(("user", "alice"),),
                                                                (("client-id", None), ("user", "alice"))}
        assert set(describe(admin, [("user", 0, "alice")], strict=True)) == {(("user", "alice"),)}
        assert set(describe(admin, [("client-id", 1, None)])) == \
            {(("client-id", None),), (("client-id", None), ("user", "alice"))}
        assert set(describe(admin, [("client-id", 2, None)], strict=True)) == {(("client-id", "c1"),),
                                                                               (("client-id", None),)}

        # the command sees what the API wrote, and the API what the command writes
        rc, out, err = cli("configs", "--entity-type", "clients", "--entity-name", "c1", "--describe", *d)
        assert rc == 0, err
        assert out == "Quota configs for client-id 'c1' are producer_byte_rate=1048576.0\n", err
        rc, out, _ = cli("configs", "--entity-type", "users", "--entity-name", "alice", "--entity-type", "clients",
                         "--entity-default", "--describe", *d)
        assert out == "Quota configs for user-principal 'alice', the default client-id are producer_byte_rate=3000.0\n"
        rc, out, err = cli("configs", "--entity-type", "clients", "--entity-name", "c2", "--alter",
                           "--add-config", "consumer_byte_rate=4096,request_percentage=12.5", *d)
        assert rc == 0, err
        assert out == "Completed updating config for client c2.\n", err
        rc, out, err = cli("configs", "--entity-type", "clients", "--entity-name", "c1", "--alter",
                           "--delete-config", "producer_byte_rate", *d)
        assert rc == 0, err
        rc, out, err = cli("configs", "--entity-type", "users", "--entity-default", "--alter",
                           "--add-config", "producer_byte_rate=777", *d)
        assert rc == 0, err
        assert out == "Completed updating default config for users in the cluster.\n", err
        got = describe(admin, [("client-id", 2, None)], strict=True)
        assert got == {(("client-id", "c2"),): {"consumer_byte_rate": 4096.0, "request_percentage": 12.5},
                       (("client-id", None),): {"consumer_byte_rate": 5e6}}  # c1 has no quota left
        assert describe(admin, [("user", 1, None)], strict=True) == {(("user", None),): {"producer_byte_rate": 777.0}}

        # validate_only and bad input: Kafka's error for that entry, nothing written
        before = quota_znodes(zk_store)
        assert alter(admin, [({"client-id": "v"}, [("producer_byte_rate", 100.0)])], validate_only=True) == [(0, None)]
        results = alter(admin, [
            ({"client-id": "c1"}, [("producer_byte_rate", -1.0)]),
            ({"client-id": "c1"}, [("consumer_byte_rate", 0.0)]),
            ({"client-id": "c1"}, [("no_such_quota", 1.0)]),
            ({"client-id": "c1"}, [("producer_byte_rate", 10.5)]),
            ({"group": "g"}, [("producer_byte_rate", 1.0)]),
            ({}, [("producer_byte_rate", 1.0)]),
            ({"user": ""}, [("producer_byte_rate", 1.0)]),
            ({"user": "a", "ip": "127.0.0.1"}, [("producer_byte_rate", 1.0)]),
        ])
        assert results == [
            (ErrorCode.INVALID_REQUEST, "Quota producer_byte_rate must be greater than 0"),
            (ErrorCode.INVALID_REQUEST, "Quota consumer_byte_rate must be greater than 0"),
            (ErrorCode.INVALID_REQUEST, "Invalid configuration key no_such_quota"),
            (ErrorCode.INVALID_REQUEST, "Configuration producer_byte_rate must be a LONG value"),
            (ErrorCode.INVALID_REQUEST, "Unhandled client quota entity type: group"),
            (ErrorCode.INVALID_REQUEST, "Invalid empty client quota entity"),
            (ErrorCode.INVALID_REQUEST, "Empty user not supported"),
            (ErrorCode.INVALID_REQUEST, "Invalid quota entity combination, IP entity should not be used with "
                                        "user/client ID entity."),
        ]
        assert describe(admin, [("group", 0, "g")]) == \
            (ErrorCode.UNSUPPORTED_VERSION, "Custom entity type 'group' not supported")
        assert describe(admin, [("user", 2, None), ("user", 0, "x")]) == \
            (ErrorCode.INVALID_REQUEST, "Duplicate user filter component entity type")
        for args, message in [
            (["clients", "--entity-name", "c1", "--alter", "--add-config", "producer_byte_rate=-5"], "greater than 0"),
            (["clients", "--entity-name", "c1", "--alter", "--add-config", "producer_byte_rate=fast"], "Cannot parse"),
            (["clients", "--entity-name", "c1", "--alter", "--add-config", "retention.ms=1"], "Invalid config(s)"),
            (["clients", "--entity-name", "c1", "--alter", "--delete-config", "producer_byte_rate"], "not set"),
            (["clients", "--entity-name", "c1", "--entity-type", "topics", "--entity-name", "t", "--describe"],
             "Unexpected entity type topics"),
            (["clients", "--describe", "--all"], "--all is for topics and brokers"),
        ]:
            rc, _, err = cli("configs", "--entity-type", *args, *d)
            assert rc == 1, (args, err)
            assert message in err, (args, err)
        assert quota_znodes(zk_store) == before

        # request time: a tiny request_percentage throttles even Metadata requests of that client id only
        assert alter(admin, [({"client-id": "busy"}, [("request_percentage", 0.001)])]) == [(0, None)]
        metadata = MetadataRequest(topics=[], allow_auto_topic_creation=False,
                                   include_cluster_authorized_operations=False,
                                   include_topic_authorized_operations=False)
        with BrokerConnection("127.0.0.1", broker.port, client_id="busy") as busy, \
                BrokerConnection("127.0.0.1", broker.port, client_id="idle") as idle:
            wait_for(lambda: busy.send(metadata, 12).throttle_time_ms > 0, 30, what="a request-time throttle")
            assert idle.send(metadata, 12).throttle_time_ms == 0
        figures = urllib.request.urlopen(f"http://127.0.0.1:{broker.actual_metrics_port}/metrics").read().decode()
        assert 'praha_client_quota_throttled_total{quota_type="Request"} 0.0' not in figures

        # --describe --all: every config with its source, as the brokers report it (kafka-configs' lines)
        zk_store.create_topic("t", TopicAssignment({0: ReplicaAssignment((1,))}), {"retention.ms": "600000"})
        wait_for(lambda: cli("configs", "--entity-type", "topics", "--entity-name", "t", "--describe", "--all",
                             *d)[0] == 0, 30, what="topic t served")
        rc, out, err = cli("configs", "--entity-type", "topics", "--entity-name", "t", "--describe", "--all", *d)
        lines = out.splitlines()
        assert rc == 0, err
        assert lines[0] == "All configs for topic t are:", err
        assert "  retention.ms=600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=600000, " \
               "DEFAULT_CONFIG:log.retention.ms=604800000}" in lines, lines
        assert "  cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}" in lines
        assert len(lines) > 30  # every topic config, not only the overrides
        rc, out, err = cli("configs", "--entity-type", "brokers", "--entity-name", "1", "--describe", "--all",
                           "--bootstrap-server", f"127.0.0.1:{broker.port}")
        assert rc == 0, err
        assert out.splitlines()[0] == "All configs for broker 1 are:", err
        assert any(line.startswith("  broker.id=1 sensitive=false synonyms={STATIC_BROKER_CONFIG:broker.id=1")
                   for line in out.splitlines()), out
        rc, out, err = cli("configs", "--entity-type", "brokers", "--entity-name", "7", "--describe", "--all", *d)
        assert rc == 1
        assert "broker 7 is not a live broker" in err
    finally:
        admin.close()


def _produce_for(client_id: str, port: int, seconds: float, counts: list[tuple[float, int]],
                 throttles: list[int], offered: float | None = None) -> None:
    """Produce 10 KB records as fast as librdkafka takes them (or at `offered` bytes/s):
    (delivery time, bytes) per record, and the largest throttle time librdkafka reports
    per statistics interval."""
    value = b"x" * 10_000
    p = Producer({"bootstrap.servers": f"127.0.0.1:{port}", "client.id": client_id, "linger.ms": 5,
                  "queue.buffering.max.kbytes": 4096, "acks": 1, "statistics.interval.ms": 1000,
                  "stats_cb": lambda s: throttles.extend(b["throttle"]["max"] for b in json.loads(s)["brokers"].values()
                                                         if b["nodeid"] >= 0)})

    def delivered(err, msg):
        if err is None:
            counts.append((time.monotonic(), len(msg.value())))

    start = time.monotonic()
    deadline = start + seconds
    sent = 0
    while (now := time.monotonic()) < deadline:
        if offered is not None and sent >= (now - start) * offered:
            p.poll(0.005)
            continue
        try:
            p.produce("rate", value, on_delivery=delivered)
            sent += len(value)
        except BufferError:
            p.poll(0.05)
            continue
        p.poll(0)
    p.flush(30)


def _consume_for(client_id: str, port: int, seconds: float, counts: list[tuple[float, int]],
                 throttles: list[int], fetch_bytes: int = 1_048_576) -> None:
    """Read partition 0 of "rate" from the start: (arrival time, bytes) per record."""
    c = Consumer({"bootstrap.servers": f"127.0.0.1:{port}", "client.id": client_id, "group.id": client_id,
                  "enable.auto.commit": False, "statistics.interval.ms": 1000,
                  "max.partition.fetch.bytes": fetch_bytes, "fetch.max.bytes": fetch_bytes * 50,
                  "message.max.bytes": min(fetch_bytes, 1_000_000),
                  "stats_cb": lambda s: throttles.extend(b["throttle"]["max"] for b in json.loads(s)["brokers"].values()
                                                         if b["nodeid"] >= 0)})
    c.assign([TopicPartition("rate", 0, 0)])
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            for m in c.consume(100, 0.2):
                if m.error() is None:
                    counts.append((time.monotonic(), len(m.value())))
    finally:
        c.close()


def _run_clients(target, runs: dict[str, tuple[list, list]], port: int, seconds: float, **kwargs) -> float:
    """Run one thread per client id; their common start time."""
    threads = [threading.Thread(target=target, args=(cid, port, seconds, counts, throttles),
                                kwargs=kwargs.get(cid, {}))
               for cid, (counts, throttles) in runs.items()]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 60)
    return start


def _rate(counts: list[tuple[float, int]], t0: float, t1: float) -> float:
    return sum(n for at, n in counts if t0 <= at < t1) / (t1 - t0)


#: the quota's averaging span with `quota.window.num=3` one-second samples
QUOTA_SPAN_S = 3.0


def _held_to(rate: float, quota: float, measured_s: float) -> bool:
    """Whether a throttled client's rate over `measured_s` is the quota's. The broker holds the
    rate over its 3 s span, so the client moves in bursts of up to a span's worth followed by a
    throttle; a fixed measuring window may cut one burst (plus a second of delivery granularity)
    at either end, so that much is the tolerance, never more."""
    slack = quota * (QUOTA_SPAN_S + 1.0) / measured_s
    return quota - slack <= rate <= quota + slack


def test_byte_rate_quotas_hold_one_client_id_and_not_another(make_cluster, zk_store, cli):
    """1 MB/s of produce on client id "limited", measured over 20 s after a 5 s start, while
    "free" produces 4 MB/s to the same broker unthrottled; then 1 MB/s of fetch on
    "slow-reader" over 10 s while "fast-reader" reads everything. The broker runs with
    `quota.window.num=3`: with Kafka's default of 11 one-second samples a greedy client is
    held to the quota over the samples' span but may burst 10 s worth whenever its oldest
    sample expires (Kafka does the same: docs/quotas.md), which a 20 s measurement cannot
    average out."""
    cluster = make_cluster(1, overrides={"quota.window.num": "3"})
    broker = cluster.load().brokers[1]
    zk_store.create_topic("rate", TopicAssignment({0: ReplicaAssignment((1,))}), {})
    for kind, name, quota in (("clients", "limited", "producer_byte_rate=1048576"),
                              ("clients", "slow-reader", "consumer_byte_rate=1048576")):
        rc, _, err = cli("configs", "--entity-type", kind, "--entity-name", name, "--alter", "--add-config", quota,
                         "--dir", str(cluster.root))
        assert rc == 0, err
    wait_for(lambda: scrape_metrics(broker.actual_metrics_port).get("praha_broker_client_quota_entities") == 2,
             30, what="the quotas applied")

    warmup, measured = 5.0, 20.0
    runs: dict[str, tuple[list, list]] = {cid: ([], []) for cid in ("limited", "free")}
    start = _run_clients(_produce_for, runs, broker.port, warmup + measured, free={"offered": 4 * 1048576})
    t0, t1 = start + warmup, start + warmup + measured
    limited, free = _rate(runs["limited"][0], t0, t1), _rate(runs["free"][0], t0, t1)
    per_second = [_rate(runs["limited"][0], start + s, start + s + 1) for s in range(int(warmup + measured))]
    assert _held_to(limited, 1048576, measured), (limited, per_second)
    assert free >= 0.9 * 4 * 1048576, free  # what it offered: not slowed
    assert max(runs["limited"][1]) > 0
    assert max(runs["free"][1]) == 0  # only "limited" was throttled

    warmup, measured = 3.0, 10.0
    reads: dict[str, tuple[list, list]] = {cid: ([], []) for cid in ("slow-reader", "fast-reader")}
    # the slow reader fetches 100 KB at a time: a throttled fetch is answered empty (Kafka's
    # way), so the smaller the fetch, the less of its quota a throttled round leaves unused
    start = _run_clients(_consume_for, reads, broker.port, warmup + measured,
                         **{"slow-reader": {"fetch_bytes": 100_000}})
    t0, t1 = start + warmup, start + warmup + measured
    slow = _rate(reads["slow-reader"][0], t0, t1)
    per_second = [_rate(reads["slow-reader"][0], start + s, start + s + 1) for s in range(int(warmup + measured))]
    assert 0.9 * 1048576 <= slow <= 1.1 * 1048576, (slow, per_second)  # 100 KB fetches: fine-grained
    total = sum(n for _, n in runs["limited"][0] + runs["free"][0])
    assert sum(n for _, n in reads["fast-reader"][0]) == total  # read everything, at its own pace
    assert max(reads["slow-reader"][1]) > 0
    assert max(reads["fast-reader"][1]) == 0

    text = urllib.request.urlopen(f"http://127.0.0.1:{broker.actual_metrics_port}/metrics", timeout=5).read().decode()
    for kind in ("Produce", "Fetch"):
        assert f'praha_client_quota_throttled_total{{quota_type="{kind}"}}' in text
        assert f'praha_client_quota_throttled_total{{quota_type="{kind}"}} 0.0' not in text
