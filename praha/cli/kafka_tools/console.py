"""kafka-console-producer and kafka-console-consumer on kafka-python (a runtime
dependency): stdin lines → records, records → stdout lines, with Kafka 3.9's options,
`--property` reader/formatter settings and the client properties of `--producer.config` /
`--consumer.config` / `--producer-property` / `--consumer-property` (Kafka's names,
translated to kafka-python's; security settings as `--command-config` reads them)."""
from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Mapping
from typing import Any

from praha.cli.kafka_tools.base import KafkaToolParser
from praha.errors import PrahaError

#: Kafka's own line reader (by its names before and after 3.5), which the producer is
LINE_READERS = ("org.apache.kafka.tools.LineMessageReader", "kafka.tools.LineMessageReader")

PRODUCER_DESCRIPTION = """\
This tool helps to read data from standard input and publish it to Kafka (Kafka's
kafka-console-producer). One record per line; --property parse.key=true splits each line
at key.separator (a tab unless set).

  kafka-console-producer --bootstrap-server B --topic t [--property parse.key=true --property key.separator=:]
"""
CONSUMER_DESCRIPTION = """\
This tool helps to read data from Kafka topics and outputs it to standard output (Kafka's
kafka-console-consumer).

  kafka-console-consumer --bootstrap-server B --topic t --from-beginning [--max-messages N] [--timeout-ms MS]
  kafka-console-consumer --bootstrap-server B --topic t --partition 0 --offset 42 --property print.key=true
"""
#: Kafka's client properties handled by the security translation, not passed on
SECURITY_PREFIXES = ("security.protocol", "sasl.", "ssl.")


def _key_values(items: list[str] | None, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PrahaError(f"Invalid {flag} '{item}': expected key=value")
        out[key.strip()] = value.strip()
    return out


def client_settings(props: Mapping[str, str], defaults: Mapping[str, Any]) -> dict[str, Any]:
    """kafka-python keyword arguments for Kafka client properties: `a.b.c` → `a_b_c`
    with the default's type; unknown ones are reported as Kafka's clients report them."""
    from praha.security.client_properties import kafka_python_settings

    out: dict[str, Any] = dict(kafka_python_settings(props))
    for key, value in props.items():
        if key.startswith(SECURITY_PREFIXES) or key == "bootstrap.servers":
            continue
        name = key.replace(".", "_")
        if name not in defaults:
            print(f"WARN The configuration '{key}' was supplied but isn't a known config.", file=sys.stderr)
            continue
        default = defaults[name]
        if name == "acks":
            out[name] = "all" if value in ("all", "-1") else int(value)
        elif isinstance(default, bool):
            out[name] = value.strip().lower() == "true"
        elif isinstance(default, int) and not isinstance(default, bool):
            out[name] = int(value)
        elif isinstance(default, float):
            out[name] = float(value)
        else:
            out[name] = value
    return out


def _props(args: argparse.Namespace, extra: dict[str, str]) -> dict[str, str]:
    """The config file's properties, then the command line's (which win, as in Kafka)."""
    from praha.security.client_properties import read_properties

    props = dict(read_properties(args.config_file)) if args.config_file else {}
    props.update(extra)
    return props


def _connection(p: KafkaToolParser, config_flag: str, property_flag: str, what: str, role: str) -> None:
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", help="REQUIRED: the server(s) to connect to")
    p.add_argument("--topic", help=f"REQUIRED: the topic to {what}")
    p.add_argument(config_flag, dest="config_file", metavar="FILE",
                   help=f"{role} config properties file (security.protocol, sasl.*, ssl.* too); "
                        f"{property_flag} takes precedence")
    p.add_argument(property_flag, dest="client_property", action="append", metavar="KEY=VALUE",
                   help=f"a {role} property, Kafka's name; repeatable")
    p.add_argument("--property", action="append", metavar="KEY=VALUE", help="reader/formatter settings (above)")


# ------------------------------------------------------------------------------ producer
def run_producer(argv: list[str]) -> int:
    from kafka import KafkaProducer

    p = KafkaToolParser("kafka-console-producer", PRODUCER_DESCRIPTION)
    _connection(p, "--producer.config", "--producer-property", "produce to", "producer")
    p.add_argument("--line-reader", metavar="CLASS",
                   help=f"Kafka's reader class: only its default ({', '.join(LINE_READERS)}), which this is")
    p.add_argument("--reader-config", metavar="FILE",
                   help="a properties file of reader settings (parse.key, key.separator, ignore.error); "
                        "--property takes precedence")
    p.add_argument("--request-required-acks", default="-1", help="acks: -1 (all, the default), 0 or 1")
    p.add_argument("--compression-codec", nargs="?", const="gzip", help="none, gzip (if no value), snappy, lz4, zstd")
    p.add_argument("--batch-size", type=int, default=16384, help="bytes per batch (default 16384)")
    p.add_argument("--timeout", type=int, default=1000, help="linger.ms (default 1000)")
    p.add_argument("--sync", action="store_true", help="send each record and wait for it")
    p.add_argument("--message-send-max-retries", type=int, help="retries")
    p.add_argument("--retry-backoff-ms", type=int, help="retry.backoff.ms")
    p.add_argument("--max-block-ms", type=int, help="max.block.ms")
    p.add_argument("--request-timeout-ms", type=int, help="request.timeout.ms")
    args = p.parse(argv)
    for flag, value in (("bootstrap-server", args.bootstrap_server), ("topic", args.topic)):
        if not value:
            p.fail(f'Missing required argument "[{flag}]"')
    from praha.security.client_properties import read_properties

    if args.line_reader is not None and args.line_reader not in LINE_READERS:
        raise PrahaError(f"--line-reader {args.line_reader}: praha's console producer reads lines itself "
                         f"(Kafka's {LINE_READERS[0]}); a Java class cannot be loaded here")
    reader = {**(read_properties(args.reader_config) if args.reader_config else {}),
              **_key_values(args.property, "--property")}
    extra = {"acks": args.request_required_acks, "batch.size": str(args.batch_size), "linger.ms": str(args.timeout)}
    for name, value in (("compression.type", args.compression_codec), ("retries", args.message_send_max_retries),
                        ("retry.backoff.ms", args.retry_backoff_ms), ("max.block.ms", args.max_block_ms),
                        ("request.timeout.ms", args.request_timeout_ms)):
        if value is not None:
            extra[name] = str(value)
    props = _props(args, {**extra, **_key_values(args.client_property, "--producer-property")})
    if props.get("compression.type") == "none":
        props.pop("compression.type")
    settings = client_settings(props, KafkaProducer.DEFAULT_CONFIG)
    parse_key = reader.get("parse.key", "false").lower() == "true"
    separator = reader.get("key.separator", "\t").encode()
    ignore_error = reader.get("ignore.error", "false").lower() == "true"
    producer = KafkaProducer(bootstrap_servers=args.bootstrap_server.split(","),
                             client_id=settings.pop("client_id", "console-producer"), **settings)
    failed: list[BaseException] = []
    try:
        for number, raw in enumerate(sys.stdin.buffer, start=1):
            line = raw.rstrip(b"\r\n")
            key: bytes | None = None
            if parse_key:
                k, found, v = line.partition(separator)
                if not found:
                    if not ignore_error:
                        raise PrahaError(f"No key separator found on line number {number}: "
                                         f"'{line.decode(errors='replace')}'")
                    k, v = line, b""
                key, line = k, v
            future = producer.send(args.topic, value=line, key=key)
            future.add_errback(failed.append)
            if args.sync:
                future.get()
        producer.flush()
    finally:
        producer.close()
    for e in failed[:1]:
        print(f"ERROR Error when sending message to topic {args.topic}: {type(e).__name__}: {e}", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------ consumer
class Formatter:
    """Kafka's DefaultMessageFormatter: timestamp, partition, offset, headers, key, value,
    each printed if asked, separated by key.separator, one record per line."""

    def __init__(self, settings: Mapping[str, str]):
        def flag(name: str, default: bool = False) -> bool:
            return settings.get(name, str(default)).strip().lower() == "true"

        self.timestamp, self.partition = flag("print.timestamp"), flag("print.partition")
        self.offset, self.headers = flag("print.offset"), flag("print.headers")
        self.key, self.value = flag("print.key"), flag("print.value", True)
        self.separator = settings.get("key.separator", "\t").encode()
        self.line = settings.get("line.separator", "\n").encode()
        self.headers_separator = settings.get("headers.separator", ",").encode()
        self.null = settings.get("null.literal", "null").encode()

    def render(self, m: Any) -> bytes:
        cols: list[bytes] = []
        if self.timestamp:
            kind = "CreateTime" if m.timestamp_type == 0 else "LogAppendTime"
            cols.append(b"NO_TIMESTAMP" if m.timestamp is None or m.timestamp < 0 else f"{kind}:{m.timestamp}".encode())
        if self.partition:
            cols.append(f"Partition:{m.partition}".encode())
        if self.offset:
            cols.append(f"Offset:{m.offset}".encode())
        if self.headers:
            cols.append(self.headers_separator.join(k.encode() + b":" + (v if v is not None else self.null)
                                                   for k, v in m.headers) if m.headers else b"NO_HEADERS")
        if self.key:
            cols.append(self.null if m.key is None else m.key)
        if self.value:
            cols.append(self.null if m.value is None else m.value)
        return self.separator.join(cols) + self.line


def run_consumer(argv: list[str]) -> int:
    from kafka import KafkaConsumer, TopicPartition

    p = KafkaToolParser("kafka-console-consumer", CONSUMER_DESCRIPTION)
    _connection(p, "--consumer.config", "--consumer-property", "consume from", "consumer")
    p.add_argument("--include", help="a regular expression of the topics to consume (instead of --topic)")
    p.add_argument("--group", help="the consumer group id (default: console-consumer-NNNNN)")
    p.add_argument("--partition", type=int, help="consume only this partition (no group)")
    p.add_argument("--offset", default="latest", help="with --partition: earliest, latest (default) or an offset")
    p.add_argument("--from-beginning", action="store_true",
                   help="start from the earliest offset without a committed one")
    p.add_argument("--max-messages", type=int, default=-1, help="exit after this many messages")
    p.add_argument("--timeout-ms", type=int, help="exit when no message arrived for this long")
    p.add_argument("--isolation-level", default="read_uncommitted", choices=["read_committed", "read_uncommitted"],
                   help="read_committed: only committed transactional records")
    p.add_argument("--skip-message-on-error", action="store_true", help="accepted, as Kafka's")
    p.add_argument("--formatter", help="accepted: praha prints with the default formatter")
    p.add_argument("--key-deserializer", help="accepted: keys are printed as bytes")
    p.add_argument("--value-deserializer", help="accepted: values are printed as bytes")
    args = p.parse(argv)
    if not args.bootstrap_server:
        p.fail('Missing required argument "[bootstrap-server]"')
    if bool(args.topic) == bool(args.include):
        p.fail("Exactly one of --include/--topic is required. ")
    if args.partition is not None:
        if not args.topic:
            p.fail("The topic is required when partition is specified.")
        if args.from_beginning and "--offset" in argv:
            p.fail("Options from-beginning and offset cannot be specified together.")
        if args.group:
            p.fail("Options group and partition cannot be specified together.")
    elif "--offset" in argv:
        p.fail("The partition is required when offset is specified.")
    offset = args.offset.lower()
    if offset not in ("earliest", "latest") and not (offset.isdigit()):
        p.fail(f"The provided offset value '{args.offset}' is incorrect. Valid values are 'earliest', 'latest', or "
               "a non-negative long.")
    props = _props(args, _key_values(args.client_property, "--consumer-property"))
    settings = client_settings(props, KafkaConsumer.DEFAULT_CONFIG)
    group = args.group or settings.pop("group_id", None)
    if args.group and settings.get("group_id") not in (None, args.group):
        p.fail("The group ids provided in different places (directly using '--group', using '--consumer-property' "
               "or '--consumer.config') do not match.")
    settings.pop("group_id", None)
    if args.partition is None and group is None:
        group = f"console-consumer-{random.randint(0, 99999)}"
    formatter = Formatter(_key_values(args.property, "--property"))
    settings.setdefault("auto_offset_reset", "earliest" if args.from_beginning or offset == "earliest" else "latest")
    if args.timeout_ms is not None:
        settings["consumer_timeout_ms"] = args.timeout_ms
    consumer = KafkaConsumer(bootstrap_servers=args.bootstrap_server.split(","), group_id=group,
                             isolation_level=args.isolation_level,
                             client_id=settings.pop("client_id", "console-consumer"), **settings)
    count = 0
    out = sys.stdout.buffer
    try:
        if args.partition is not None:
            tp = TopicPartition(args.topic, args.partition)
            if args.partition not in (consumer.partitions_for_topic(args.topic) or set()):
                raise PrahaError(f"Partition {args.partition} of topic {args.topic} does not exist")
            consumer.assign([tp])
            if offset == "earliest" or args.from_beginning:
                consumer.seek_to_beginning(tp)
            elif offset == "latest":
                consumer.seek_to_end(tp)
            else:
                consumer.seek(tp, int(offset))
        elif args.include:
            consumer.subscribe(pattern=args.include)
        else:
            consumer.subscribe([args.topic])
        for message in consumer:
            out.write(formatter.render(message))
            out.flush()
            count += 1
            if count == args.max_messages:
                break
        else:
            if args.timeout_ms is not None:
                print("ERROR Error processing message, terminating consumer process: "
                      "org.apache.kafka.common.errors.TimeoutException", file=sys.stderr)
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
        print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0
