"""The Schema Registry every broker serves (issue 25), used by unmodified confluent-kafka
2.16.1: its SchemaRegistryClient and its Avro, JSON Schema and Protobuf serializers
round-trip records through a praha topic with schemas auto-registered; compatibility is
enforced (409) and the client's own check agrees; bad input gets Confluent's error codes
and stores nothing; the primary's broker SIGKILLed, registrations go on through the new
primary, no id is reused, and every broker's registry answers alike."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
import test_quix_streams
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from praha.testing.cluster import bootstrap, cluster_on_chroot, wait_for

pytestmark = pytest.mark.integration
quix_python = test_quix_streams.quix_python  # the fixture that builds .venv-quix


@pytest.fixture(scope="module")
def cluster(zookeeper, tmp_path_factory):
    with cluster_on_chroot(zookeeper.connect_string, tmp_path_factory.mktemp("registry"), 3, store=False) as c:
        yield c.cluster


def urls(cluster) -> dict[int, str]:
    return {b.id: b.schema_registry for b in cluster.load().brokers.values()}


def http(url: str, method: str = "GET", body: bytes | None = None) -> tuple[int, object]:
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def round_trip(cluster, topic: str, serializer, deserializer, values: list) -> list:
    if serializer is not None:
        p = Producer({"bootstrap.servers": bootstrap(cluster), "acks": "all"})
        for v in values:
            p.produce(topic, value=serializer(v, SerializationContext(topic, MessageField.VALUE)))
        assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bootstrap(cluster), "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    out: list = []
    try:
        for _ in range(300):
            if len(out) == len(values):
                break
            m = c.poll(0.5)
            if m is not None and not m.error():
                out.append(deserializer(m.value(), SerializationContext(topic, MessageField.VALUE)))
    finally:
        c.close()
    return out


USER_V1 = {"type": "record", "name": "User", "namespace": "praha.test",
           "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}


def test_avro_round_trip_and_compatibility(cluster):
    sr_url = urls(cluster)[2]
    client = SchemaRegistryClient({"url": sr_url})
    ser = AvroSerializer(client, json.dumps(USER_V1))
    de = AvroDeserializer(client)
    values = [{"name": f"u{i}", "age": i} for i in range(5)]
    assert round_trip(cluster, "users-avro", ser, de, values) == values
    latest = client.get_latest_version("users-avro-value")
    assert latest.version == 1
    assert json.loads(latest.schema.schema_str)["name"] == "User"

    v2 = dict(USER_V1, fields=USER_V1["fields"] + [{"name": "email", "type": "string", "default": ""}])
    assert client.test_compatibility("users-avro-value", Schema(json.dumps(v2), "AVRO")) is True
    id2 = client.register_schema("users-avro-value", Schema(json.dumps(v2), "AVRO"))
    assert id2 != latest.schema_id
    assert client.get_versions("users-avro-value") == [1, 2]

    # a new field without a default: old records cannot be read with it (BACKWARD refuses)
    bad = dict(v2, fields=v2["fields"] + [{"name": "phone", "type": "string"}])
    assert client.test_compatibility("users-avro-value", Schema(json.dumps(bad), "AVRO")) is False
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("users-avro-value", Schema(json.dumps(bad), "AVRO"))
    assert e.value.http_status_code == 409
    assert e.value.error_code == 409
    # removing a required field: BACKWARD allows it (a reader ignores it), FORWARD/FULL do not
    dropped = dict(v2, fields=[f for f in v2["fields"] if f["name"] != "age"])
    client.set_compatibility("users-avro-value", "FULL")
    assert client.get_compatibility("users-avro-value") == "FULL"
    assert client.test_compatibility("users-avro-value", Schema(json.dumps(dropped), "AVRO")) is False
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("users-avro-value", Schema(json.dumps(dropped), "AVRO"))
    assert e.value.http_status_code == 409
    assert client.get_versions("users-avro-value") == [1, 2]  # nothing stored

    # the same schema registered again (other whitespace, another subject) keeps its id
    again = client.register_schema("users-copy", Schema(json.dumps(v2, indent=2), "AVRO"))
    assert again == id2
    assert client.lookup_schema("users-avro-value", Schema(json.dumps(v2), "AVRO")).version == 2


def test_json_schema_round_trip(cluster):
    client = SchemaRegistryClient({"url": urls(cluster)[3]})
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
              "properties": {"id": {"type": "integer"}, "item": {"type": "string"}}, "required": ["id"]}
    ser = JSONSerializer(json.dumps(schema), client)
    de = JSONDeserializer(json.dumps(schema), schema_registry_client=client)
    values = [{"id": i, "item": f"thing-{i}"} for i in range(4)]
    assert round_trip(cluster, "orders-json", ser, de, values) == values
    registered = client.get_latest_version("orders-json-value")
    assert registered.schema.schema_type == "JSON"
    # a required property added is refused; an optional one with a closed writer is not checked here
    stricter = dict(schema, required=["id", "item", "qty"], properties={**schema["properties"],
                                                                        "qty": {"type": "integer"}})
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("orders-json-value", Schema(json.dumps(stricter), "JSON"))
    assert e.value.http_status_code == 409


def _message_class():
    """A protobuf message class built at run time (no generated module needed)."""
    fd = descriptor_pb2.FileDescriptorProto(name="praha_test_reading.proto", package="praha.test", syntax="proto3")
    m = fd.message_type.add(name="Reading")
    m.field.add(name="sensor", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    m.field.add(name="value", number=2, type=descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
                label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("praha.test.Reading"))


def _order_class():
    """A message in a file that imports another (a reference the serializer registers first)
    and a well-known type."""
    from google.protobuf import timestamp_pb2
    FD = descriptor_pb2.FieldDescriptorProto
    money = descriptor_pb2.FileDescriptorProto(name="praha_test_money.proto", package="praha.test", syntax="proto3")
    money.message_type.add(name="Money").field.add(name="cents", number=1, type=FD.TYPE_INT64,
                                                   label=FD.LABEL_OPTIONAL)
    order = descriptor_pb2.FileDescriptorProto(name="praha_test_order.proto", package="praha.test", syntax="proto3",
                                               dependency=["praha_test_money.proto", "google/protobuf/timestamp.proto"])
    m = order.message_type.add(name="Order")
    m.field.add(name="id", number=1, type=FD.TYPE_STRING, label=FD.LABEL_OPTIONAL)
    m.field.add(name="price", number=2, type=FD.TYPE_MESSAGE, type_name=".praha.test.Money", label=FD.LABEL_OPTIONAL)
    m.field.add(name="at", number=3, type=FD.TYPE_MESSAGE, type_name=".google.protobuf.Timestamp",
                label=FD.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(money)
    pool.Add(order)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("praha.test.Order"))


def test_protobuf_references_round_trip(cluster):
    client = SchemaRegistryClient({"url": urls(cluster)[3]})
    Order = _order_class()
    ser = ProtobufSerializer(Order, client, {"use.deprecated.format": False})
    de = ProtobufDeserializer(Order, {"use.deprecated.format": False})
    values = [Order(id=f"o{i}") for i in range(3)]
    for i, v in enumerate(values):
        v.price.cents = 100 * i
        v.at.seconds = 1_700_000_000 + i
    got = round_trip(cluster, "orders-proto", ser, de, values)
    assert [(o.id, o.price.cents, o.at.seconds) for o in got] == [(v.id, v.price.cents, v.at.seconds) for v in values]
    latest = client.get_latest_version("orders-proto-value")
    assert "praha_test_money.proto" in [r.name for r in latest.schema.references]
    assert "praha_test_money.proto" in client.get_subjects()


def test_protobuf_round_trip(cluster):
    client = SchemaRegistryClient({"url": urls(cluster)[1]})
    Reading = _message_class()
    ser = ProtobufSerializer(Reading, client, {"use.deprecated.format": False})
    de = ProtobufDeserializer(Reading, {"use.deprecated.format": False})
    values = [Reading(sensor=f"s{i}", value=i / 2) for i in range(4)]
    got = round_trip(cluster, "readings-proto", ser, de, values)
    assert [(r.sensor, r.value) for r in got] == [(v.sensor, v.value) for v in values]
    assert client.get_latest_version("readings-proto-value").schema.schema_type == "PROTOBUF"
    # the same message as .proto text: a changed field type is refused
    text = 'syntax = "proto3"; package praha.test; message Reading { string sensor = 1; string value = 2; }'
    with pytest.raises(SchemaRegistryError) as e:
        client.register_schema("readings-proto-value", Schema(text, "PROTOBUF"))
    assert e.value.http_status_code == 409


@pytest.mark.parametrize(("body", "path", "status", "code"), [
    (b'{"schema": "{\\"type\\": \\"recrd\\"}"}', "/subjects/bad/versions", 422, 42201),
    (b'{"schema": "not json"}', "/subjects/bad/versions", 422, 42201),
    (b'{"schema": "{}", "schemaType": "XML"}', "/subjects/bad/versions", 422, 42201),
    (b'{"schema": "{\\"type\\": \\"record\\", \\"name\\": \\"A\\", \\"fields\\": [{\\"name\\": \\"b\\", '
     b'\\"type\\": \\"B\\"}]}", "references": [{"name": "B", "subject": "missing", "version": 1}]}',
     "/subjects/bad/versions", 422, 42201),
    (b'{"schema": ', "/subjects/bad/versions", 400, 400),
    (None, "/subjects/users-avro-value/versions/0", 422, 42202),
    (None, "/subjects/users-avro-value/versions/-2", 422, 42202),
    (None, "/subjects/nope/versions/1", 404, 40401),
    (None, "/subjects/users-avro-value/versions/99", 404, 40402),
    (None, "/schemas/ids/987654", 404, 40403),
])
def test_bad_input_gets_confluents_error_and_stores_nothing(cluster, body, path, status, code):
    url = urls(cluster)[1]
    got_status, got = http(url + path, "POST" if body is not None else "GET", body)
    assert (got_status, got["error_code"]) == (status, code), got
    assert "bad" not in http(url + "/subjects?deleted=true")[1]


def test_reads_agree_on_every_broker_and_the_primary_can_be_killed(cluster):
    sr = urls(cluster)
    primary = json.loads(wait_for(lambda: _primary_znode(cluster), what="a registry primary"))["broker_id"]
    other = next(b for b in sr if b != primary)
    ids = set()
    for i in range(3):  # through a broker that is not the primary: forwarded
        st, body = http(sr[other] + f"/subjects/failover-{i}/versions", "POST",
                        json.dumps({"schema": json.dumps({"type": "enum", "name": f"E{i}",
                                                          "symbols": ["A"]})}).encode())
        assert st == 200, body
        ids.add(body["id"])
        for url in sr.values():  # read-your-writes on every broker
            assert http(url + f"/subjects/failover-{i}/versions/latest")[1]["id"] == body["id"]
    cluster.kill_broker(primary)
    survivors = {b: u for b, u in sr.items() if b != primary}
    new_ids = set()
    for i in range(3, 6):
        def register(i=i):
            st, body = http(next(iter(survivors.values())) + f"/subjects/failover-{i}/versions", "POST",
                            json.dumps({"schema": json.dumps({"type": "fixed", "name": f"F{i}", "size": i})}).encode())
            return body["id"] if st == 200 else None
        new_ids.add(wait_for(register, timeout=60, what="a registration after the primary's broker was killed"))
    assert not new_ids & ids
    assert len(new_ids) == 3
    answers = [http(u + "/subjects")[1] for u in survivors.values()]
    assert answers[0] == answers[1]
    assert {f"failover-{i}" for i in range(6)} <= set(answers[0])
    for sid in ids | new_ids:
        assert len({json.dumps(http(u + f"/schemas/ids/{sid}")[1]) for u in survivors.values()}) == 1
    cluster.start_broker(primary)


def _primary_znode(cluster):
    from praha.zk.store import ZkStore
    store = ZkStore(cluster.load().zookeeper).start()
    try:
        got = store.get_data("/schema_registry/primary")
        return got[0].decode() if got else None
    finally:
        store.stop()


@pytest.mark.slow  # a Quix application start-up (~30 s); `make test-registry` runs it
def test_quix_streams_with_a_registry_backed_serializer(cluster, quix_python, tmp_path):
    """Quix Streams (in .venv-quix) writes Avro through its registry-backed serializer; the
    records decode here with confluent-kafka's AvroDeserializer and the registry's schema."""
    import subprocess
    from pathlib import Path

    app = Path(__file__).resolve().parents[1] / "frameworks" / "quix_registry_app.py"
    p = Producer({"bootstrap.servers": bootstrap(cluster), "acks": "all"})
    for i in range(5):
        p.produce("quix-orders", value=json.dumps({"id": i, "amount": i * 1.5}))
    assert p.flush(30) == 0
    log = tmp_path / "quix.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([str(quix_python), str(app), "--broker", bootstrap(cluster), "--registry",
                                 urls(cluster)[2], "--input", "quix-orders", "--output", "quix-orders-avro",
                                 "--count", "5", "--state-dir", str(tmp_path / "state")],
                                stdout=out, stderr=subprocess.STDOUT)
        try:
            assert proc.wait(timeout=180) == 0, log.read_text()[-3000:]
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    client = SchemaRegistryClient({"url": urls(cluster)[3]})
    assert "quix-orders-avro-value" in client.get_subjects()
    got = round_trip(cluster, "quix-orders-avro", None, AvroDeserializer(client), [None] * 5)
    assert sorted(got, key=lambda r: r["id"]) == [{"id": i, "amount": i * 1.5} for i in range(5)]


def test_praha_schemas_command(cluster, cli, tmp_path):
    d = ["--dir", cluster.root]
    status = json.loads(cli("cluster", "status", "--json", *d)[1])
    assert {b["id"]: b["schema_registry"] for b in status["brokers"]} == urls(cluster)
    avsc = tmp_path / "point.avsc"
    avsc.write_text(json.dumps({"type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"}]}))
    rc, out, err = cli("schemas", "register", "--subject", "points", "--schema-file", avsc, *d)
    assert rc == 0, err
    assert "version 1" in out, err
    assert "points" in cli("schemas", "list", *d)[1].split()
    shown = json.loads(cli("schemas", "show", "--subject", "points", *d)[1])
    assert shown["version"] == 1
    assert shown["compatibility"] == "BACKWARD"
    avsc.write_text(json.dumps({"type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"},
                                                                            {"name": "y", "type": "int"}]}))
    rc, out, _ = cli("schemas", "check", "--subject", "points", "--schema-file", avsc, *d)
    assert rc == 1
    assert "NOT compatible" in out
    assert "y" in out
    assert cli("schemas", "compatibility", "--subject", "points", "--set", "none", *d)[1].strip() == "NONE"
    assert cli("schemas", "check", "--subject", "points", "--schema-file", avsc, *d)[0] == 0
    assert cli("schemas", "register", "--subject", "points", "--schema-file", avsc, *d)[0] == 0
    rc, out, _ = cli("schemas", "delete", "--subject", "points", "--version", "1", *d)
    assert rc == 0
    assert "[1]" not in out
    assert "1" in out
    rc, _, err = cli("schemas", "delete", "--subject", "points", "--version", "1", *d)
    assert rc == 1
    assert "40406" in err
    rc, _, err = cli("schemas", "register", "--subject", "bad", "--schema-file", tmp_path / "missing.avsc", *d)
    assert rc == 1
    assert "cannot read" in err
