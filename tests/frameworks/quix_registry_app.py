"""A Quix Streams application with a registry-backed serializer, run in `.venv-quix` by
tests/integration/test_schema_registry.py: it reads JSON orders and writes them to the
output topic with Quix's AvroSerializer backed by praha's Schema Registry (Confluent's
AvroSerializer underneath, schema auto-registered), then exits after `--count` records."""
from __future__ import annotations

import argparse

from quixstreams import Application
from quixstreams.models.serializers.avro import AvroSerializer
from quixstreams.models.serializers.schema_registry import SchemaRegistryClientConfig

SCHEMA = {"type": "record", "name": "Order", "namespace": "praha.quix",
          "fields": [{"name": "id", "type": "long"}, {"name": "amount", "type": "double"}]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--broker", required=True)
    p.add_argument("--registry", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--state-dir", required=True)
    args = p.parse_args()
    app = Application(broker_address=args.broker, consumer_group="quix-registry", auto_offset_reset="earliest",
                      state_dir=args.state_dir)
    source = app.topic(args.input, value_deserializer="json")
    serializer = AvroSerializer(SCHEMA, schema_registry_client_config=SchemaRegistryClientConfig(url=args.registry))
    out = app.topic(args.output, value_serializer=serializer)
    app.dataframe(source).apply(lambda v: {"id": v["id"], "amount": float(v["amount"])}).to_topic(out)
    app.run(count=args.count, timeout=120)


if __name__ == "__main__":
    main()
