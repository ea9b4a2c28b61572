"""Catalogue: every `praha` command given invalid arguments, with the exact error it prints.

Each case runs the CLI in-process against the shared misuse cluster and asserts the exit
code and the last line of stderr word for word (exit 1: `error: ...` from the command;
exit 2: argparse's usage error). Placeholders: {dir} (the cluster directory), {f:NAME}
(a file from FILES), {pid1} (broker 1's pid), {long} (a 250-character name).
"""
from __future__ import annotations

import json

import pytest

from praha.cli.main import main

pytestmark = pytest.mark.integration

PLAN = {"version": 1, "partitions": []}


def plan(*entries) -> str:
    return json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r} for t, p, r in entries]})


FILES = {
    "zk-tls-only.properties": "zookeeper.ssl.client.enable=true\n",
    "zk-jks.properties": "zookeeper.ssl.client.enable=true\nzookeeper.ssl.truststore.location=/x.jks\n"
                         "zookeeper.ssl.truststore.type=JKS\n",
    "bad.json": "{not json",
    "list.json": json.dumps([1, 2, 3]),
    "v2.json": json.dumps({"version": 2, "partitions": [{"topic": "orders", "partition": 0, "replicas": [1, 2]}]}),
    "empty.json": json.dumps(PLAN),
    "unknown_topic.json": plan(("nosuch", 0, [1, 2])),
    "unknown_partition.json": plan(("orders", 9, [1, 2])),
    "unknown_broker.json": plan(("orders", 0, [1, 9])),
    "negative_broker.json": plan(("orders", 0, [-1, 2])),
    "dup_replicas.json": plan(("orders", 0, [2, 2])),
    "dup_partitions.json": plan(("orders", 0, [2, 3]), ("orders", 0, [3, 1])),
    "no_replicas.json": plan(("orders", 0, [])),
    "string_partition.json": json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": "0", "replicas": [1, 2]}]}),
    "relative_log_dir.json": json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [2, 3], "log_dirs": ["any", "data"]}]}),
    "short_log_dirs.json": json.dumps({"version": 1, "partitions": [
        {"topic": "orders", "partition": 0, "replicas": [2, 3], "log_dirs": ["any"]}]}),
    "topics_ok.json": json.dumps({"version": 1, "topics": [{"topic": "orders"}]}),
    "topics_unknown.json": json.dumps({"version": 1, "topics": [{"topic": "nosuch"}]}),
    "topics_empty.json": json.dumps({"version": 1, "topics": []}),
    "topics_dup.json": json.dumps({"version": 1, "topics": [{"topic": "orders"}, {"topic": "orders"}]}),
    "elect_dup.json": json.dumps({"partitions": [{"topic": "orders", "partition": 0}] * 2}),
    "elect_empty.json": json.dumps({"partitions": []}),
    "elect_unknown.json": json.dumps({"partitions": [{"topic": "nosuch", "partition": 0}]}),
}

LONG = "x" * 250
NO_JSON = "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"
PLAN_USAGE = 'expected {"version":1,"partitions":[{"topic":"foo","partition":0,"replicas":[1,2,3]},...]}'
KNOWN_CONFIGS = (
    "cleanup.policy, compression.type, delete.retention.ms, file.delete.delay.ms, flush.messages, flush.ms, "
    "follower.replication.throttled.replicas, index.interval.bytes, leader.replication.throttled.replicas, "
    "max.compaction.lag.ms, max.message.bytes, message.downconversion.enable, message.format.version, "
    "message.timestamp.after.max.ms, message.timestamp.before.max.ms, message.timestamp.difference.max.ms, "
    "message.timestamp.type, min.cleanable.dirty.ratio, min.compaction.lag.ms, min.insync.replicas, preallocate, "
    "retention.bytes, retention.ms, segment.bytes, segment.index.bytes, segment.jitter.ms, segment.ms, "
    "unclean.leader.election.enable")

# (id, argv, exit code, last line of stderr)
CATALOGUE = [
    # ---- topics create
    ("create-illegal-chars", "topics create --topic 'bad name!' --partitions 1 --replication-factor 1", 1,
     "error: topic name 'bad name!' contains illegal characters [' ', '!']; use only ASCII letters, digits, "
     "'.', '_' and '-'"),
    ("create-name-too-long", "topics create --topic {long} --partitions 1 --replication-factor 1", 1,
     "error: topic name is 250 characters long; the limit is 249"),
    ("create-name-dotdot", "topics create --topic .. --partitions 1 --replication-factor 1", 1,
     "error: topic name cannot be '..'"),
    ("create-name-empty", "topics create --topic '' --partitions 1 --replication-factor 1", 1,
     "error: topic name is empty"),
    ("create-zero-partitions", "topics create --topic t1 --partitions 0 --replication-factor 1", 1,
     "error: number of partitions must be larger than 0, got 0"),
    ("create-negative-partitions", "topics create --topic t1 --partitions -3 --replication-factor 1", 1,
     "error: number of partitions must be larger than 0, got -3"),
    ("create-zero-rf", "topics create --topic t1 --partitions 1 --replication-factor 0", 1,
     "error: replication factor must be larger than 0, got 0"),
    ("create-negative-rf", "topics create --topic t1 --partitions 1 --replication-factor -1", 1,
     "error: replication factor must be larger than 0, got -1"),
    ("create-config-retention-below-minus-one", "topics create --topic t1 --partitions 1 --replication-factor 1 "
     "--config retention.ms=-5", 1,
     "error: Invalid value -5 for configuration retention.ms: Value must be at least -1"),
    ("create-rf-above-brokers", "topics create --topic t1 --partitions 1 --replication-factor 4", 1,
     "error: replication factor: 4 larger than available brokers: 3"),
    ("create-exists", "topics create --topic orders --partitions 1 --replication-factor 1", 1,
     "error: topic 'orders' already exists"),
    ("create-collides", "topics create --topic orders.x --partitions 1 --replication-factor 1", 1,
     "error: topic 'orders.x' collides with existing topic 'orders_x' ('.' and '_' are equivalent)"),
    ("create-config-not-a-number", "topics create --topic t1 --partitions 1 --replication-factor 1 "
     "--config min.insync.replicas=abc", 1,
     "error: invalid value 'abc' for topic config min.insync.replicas: expected a number"),
    ("create-config-out-of-range", "topics create --topic t1 --partitions 1 --replication-factor 1 "
     "--config min.insync.replicas=0", 1, "error: min.insync.replicas must be at least 1"),
    ("create-config-unknown", "topics create --topic t1 --partitions 1 --replication-factor 1 "
     "--config no.such.config=1", 1, f"error: unknown topic config 'no.such.config' (known: {KNOWN_CONFIGS})"),
    ("create-config-no-value", "topics create --topic t1 --config retention.ms", 2,
     "praha topics create: error: argument --config: expected key=value, got 'retention.ms'"),
    ("create-config-empty-key", "topics create --topic t1 --config =5", 2,
     "praha topics create: error: argument --config: empty key in '=5'"),
    ("create-partitions-not-int", "topics create --topic t1 --partitions abc", 2,
     "praha topics create: error: argument --partitions: invalid int value: 'abc'"),
    ("create-assignment-dup-broker", "topics create --topic t1 --replica-assignment 1:1:2", 1,
     "error: partition 0 lists a broker twice: [1, 1, 2]"),
    ("create-assignment-unknown-broker", "topics create --topic t1 --replica-assignment 1:9", 1,
     "error: partition 0 is assigned to unknown or dead brokers [9] (live: [1, 2, 3])"),
    ("create-assignment-ragged", "topics create --topic t1 --replica-assignment 1:2,3", 1,
     "error: every partition must have the same number of replicas"),
    ("create-assignment-not-ids", "topics create --topic t1 --replica-assignment a:b", 1,
     "error: invalid replica assignment 'a:b': partition 0 is 'a:b', expected broker ids joined by ':'"),
    ("create-assignment-and-counts", "topics create --topic t1 --partitions 1 --replication-factor 1 "
     "--replica-assignment 1", 1,
     "error: give either a replica assignment or partitions and replication factor, not both"),
    # ---- topics delete / alter / describe
    ("delete-unknown", "topics delete --topic nosuch", 1, "error: Topic 'nosuch' does not exist."),
    ("delete-illegal-name", "topics delete --topic 'bad name!'", 1, "error: Topic 'bad name!' does not exist."),
    ("alter-unknown", "topics alter --topic nosuch --partitions 5", 1, "error: Topic 'nosuch' does not exist."),
    ("alter-decrease", "topics alter --topic orders --partitions 2", 1,
     "error: The number of partitions for a topic can only be increased. Topic orders currently has 3 "
     "partitions, 2 would not be an increase."),
    ("alter-same", "topics alter --topic orders --partitions 3", 1,
     "error: The number of partitions for a topic can only be increased. Topic orders currently has 3 "
     "partitions, 3 would not be an increase."),
    ("alter-negative", "topics alter --topic orders --partitions -1", 1,
     "error: The number of partitions for a topic can only be increased. Topic orders currently has 3 "
     "partitions, -1 would not be an increase."),
    ("alter-unknown-broker", "topics alter --topic orders --partitions 4 --replica-assignment 1:9", 1,
     "error: Unknown broker(s) in replica assignment: 9."),
    ("alter-dup-broker", "topics alter --topic orders --partitions 4 --replica-assignment 1:1", 1,
     "error: Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 3."),
    ("describe-unknown", "topics describe --topic nosuch", 1, "error: unknown topic 'nosuch'"),
    # ---- reassign
    ("execute-missing-file", "reassign execute --reassignment-json-file {f:missing.json}", 1,
     "error: cannot read the reassignment file {f:missing.json}: No such file or directory"),
    ("execute-bad-json", "reassign execute --reassignment-json-file {f:bad.json}", 1,
     f"error: the reassignment file is not valid JSON: {NO_JSON}"),
    ("execute-not-an-object", "reassign execute --reassignment-json-file {f:list.json}", 1,
     f"error: invalid reassignment JSON: {PLAN_USAGE}"),
    ("execute-version-2", "reassign execute --reassignment-json-file {f:v2.json}", 1,
     "error: Not supported version field value 2"),
    ("execute-empty", "reassign execute --reassignment-json-file {f:empty.json}", 1,
     "error: Partition reassignment list cannot be empty."),
    ("execute-unknown-topic", "reassign execute --reassignment-json-file {f:unknown_topic.json}", 1,
     "error: Topic nosuch not found."),
    ("execute-unknown-partition", "reassign execute --reassignment-json-file {f:unknown_partition.json}", 1,
     "error: Unable to find partition: orders-9"),
    ("execute-unknown-broker", "reassign execute --reassignment-json-file {f:unknown_broker.json}", 1,
     "error: Unknown broker id 9 (live brokers: 1,2,3)"),
    ("execute-negative-broker", "reassign execute --reassignment-json-file {f:negative_broker.json}", 1,
     "error: Unknown broker id -1 (live brokers: 1,2,3)"),
    ("execute-dup-replicas", "reassign execute --reassignment-json-file {f:dup_replicas.json}", 1,
     "error: Partition replica lists may not contain duplicate entries: orders-0 contains multiple entries for 2"),
    ("execute-dup-partitions", "reassign execute --reassignment-json-file {f:dup_partitions.json}", 1,
     "error: Partition reassignment contains duplicate topic partitions: orders-0"),
    ("execute-no-replicas", "reassign execute --reassignment-json-file {f:no_replicas.json}", 1,
     "error: Empty replica list specified for partition orders-0"),
    ("execute-relative-log-dir", "reassign execute --reassignment-json-file {f:relative_log_dir.json}", 1,
     "error: invalid log dirs list ['any', 'data'] for partition orders-0: each entry is \"any\" or an absolute path"),
    ("execute-short-log-dirs", "reassign execute --reassignment-json-file {f:short_log_dirs.json}", 1,
     "error: Size of replicas list [2, 3] is different from size of log dirs list ['any'] for partition orders-0"),
    ("execute-string-partition", "reassign execute --reassignment-json-file {f:string_partition.json}", 1,
     'error: invalid reassignment entry {"topic": "orders", "partition": "0", "replicas": [1, 2]}: ' + PLAN_USAGE),
    ("execute-negative-throttle", "reassign execute --reassignment-json-file {f:empty.json} --throttle -5", 2,
     "praha reassign execute: error: argument --throttle: the throttle must be positive, got -5"),
    ("generate-bad-broker-list", "reassign generate --topics-to-move-json-file {f:topics_ok.json} --broker-list 1,x", 1,
     "error: invalid broker list '1,x': expected broker ids separated by ',' (e.g. 1,2,3)"),
    ("generate-dup-brokers", "reassign generate --topics-to-move-json-file {f:topics_ok.json} --broker-list 1,1", 1,
     "error: Broker list contains duplicate entries: 1"),
    ("generate-unknown-broker", "reassign generate --topics-to-move-json-file {f:topics_ok.json} --broker-list 1,9", 1,
     "error: Unknown broker id 9 (live brokers: 1,2,3)"),
    ("generate-too-few-brokers", "reassign generate --topics-to-move-json-file {f:topics_ok.json} --broker-list 1", 1,
     "error: replication factor: 2 larger than available brokers: 1"),
    ("generate-unknown-topic", "reassign generate --topics-to-move-json-file {f:topics_unknown.json} --broker-list 1,2",
     1, "error: Topic nosuch not found."),
    ("generate-no-topics", "reassign generate --topics-to-move-json-file {f:topics_empty.json} --broker-list 1,2", 1,
     "error: List of topics to reassign is empty."),
    ("generate-dup-topics", "reassign generate --topics-to-move-json-file {f:topics_dup.json} --broker-list 1,2", 1,
     "error: List of topics to reassign contains duplicate entries: orders"),
    ("generate-bad-json", "reassign generate --topics-to-move-json-file {f:bad.json} --broker-list 1,2", 1,
     f"error: the topics-to-move file is not valid JSON: {NO_JSON}"),
    ("verify-bad-json", "reassign verify --reassignment-json-file {f:bad.json}", 1,
     f"error: the reassignment file is not valid JSON: {NO_JSON}"),
    ("verify-unknown-partition", "reassign verify --reassignment-json-file {f:unknown_topic.json}", 1,
     "error: Unable to find partition: nosuch-0"),
    ("cancel-unknown-partition", "reassign cancel --reassignment-json-file {f:unknown_topic.json}", 1,
     "error: Unable to find partition: nosuch-0"),
    # ---- elect-leaders
    ("elect-unknown-topic", "elect-leaders --election-type preferred --topic nosuch", 1,
     "error: Topic 'nosuch' does not exist."),
    ("elect-unknown-partition", "elect-leaders --election-type preferred --topic orders --partition 99", 1,
     "error: Unknown partition: orders-99"),
    ("elect-bad-json", "elect-leaders --election-type preferred --path-to-json-file {f:bad.json}", 1,
     f"error: the election file is not valid JSON: {NO_JSON}"),
    ("elect-dup-partitions", "elect-leaders --election-type preferred --path-to-json-file {f:elect_dup.json}", 1,
     "error: Replica election data contains duplicate partitions: orders-0"),
    ("elect-empty-file", "elect-leaders --election-type preferred --path-to-json-file {f:elect_empty.json}", 1,
     "error: the election file lists no partitions"),
    ("elect-unknown-in-file", "elect-leaders --election-type preferred --path-to-json-file {f:elect_unknown.json}", 1,
     "error: Topic 'nosuch' does not exist."),
    ("elect-missing-file", "elect-leaders --election-type preferred --path-to-json-file {f:missing.json}", 1,
     "error: cannot read the election file {f:missing.json}: No such file or directory"),
    ("elect-unclean-via-zookeeper", "elect-leaders --election-type unclean --topic orders --via-zookeeper", 1,
     "error: --via-zookeeper elects preferred leaders only (ZooKeeper's admin znode has no unclean elections); "
     "drop it for --election-type unclean"),
    ("elect-partition-without-topic", "elect-leaders --election-type preferred --partition 0 --all-topic-partitions",
     1, "error: --partition needs --topic"),
    ("elect-no-target", "elect-leaders --election-type preferred", 2,
     "praha elect-leaders: error: one of the arguments --all-topic-partitions --topic --path-to-json-file "
     "is required"),
    ("elect-bad-type", "elect-leaders --election-type nonsense --topic orders", 2,
     "praha elect-leaders: error: argument --election-type: invalid choice: 'nonsense' "
     "(choose from 'preferred', 'unclean')"),
    # ---- configs
    ("configs-unknown-topic", "configs --entity-type topics --entity-name nosuch --describe", 1,
     "error: topic 'nosuch' does not exist"),
    ("configs-unknown-key", "configs --entity-type topics --entity-name orders --alter --add-config no.such=1", 1,
     f"error: unknown topic config 'no.such' (known: {KNOWN_CONFIGS})"),
    ("configs-bad-value", "configs --entity-type topics --entity-name orders --alter --add-config retention.ms=soon",
     1, "error: invalid value 'soon' for topic config retention.ms: expected a number"),
    ("configs-no-value", "configs --entity-type topics --entity-name orders --alter --add-config retention.ms", 1,
     "error: expected key=value in --add-config, got 'retention.ms'"),
    ("configs-nothing", "configs --entity-type topics --entity-name orders --alter", 1,
     "error: nothing to alter: give --add-config and/or --delete-config"),
    ("configs-delete-unset", "configs --entity-type topics --entity-name orders --alter --delete-config segment.ms",
     1, "error: cannot delete segment.ms: not set for topics/orders"),
    ("configs-add-and-delete", "configs --entity-type topics --entity-name orders --alter "
     "--add-config retention.ms=1 --delete-config retention.ms", 1, "error: retention.ms both added and deleted"),
    ("configs-describe-with-add", "configs --entity-type topics --entity-name orders --describe "
     "--add-config retention.ms=1", 1, "error: --add-config and --delete-config go with --alter"),
    ("configs-static-broker-key", "configs --entity-type brokers --entity-name 1 --alter --add-config num.partitions=3",
     1, "error: Cannot update these configs dynamically: num.partitions"),
    ("configs-bad-rate", "configs --entity-type brokers --entity-name 1 --alter "
     "--add-config follower.replication.throttled.rate=0", 1,
     "error: invalid value '0' for follower.replication.throttled.rate: expected a positive number of bytes/s"),
    ("configs-bad-broker", "configs --entity-type brokers --entity-name one --describe", 1,
     "error: broker must be a non-negative id or <default>, not 'one'"),
    # issue 15 §5: values Kafka refuses, refused before anything is written
    ("configs-unknown-broker", "configs --entity-type brokers --entity-name 7 --alter --add-config num.partitions=3",
     1, "error: broker 7 is not registered (live brokers: 1, 2, 3); use --entity-default for all brokers"),
    ("configs-segment-bytes-tiny", "configs --entity-type topics --entity-name orders --alter "
     "--add-config segment.bytes=1", 1,
     "error: Invalid value 1 for configuration segment.bytes: Value must be at least 14"),
    ("configs-min-isr-above-rf", "configs --entity-type topics --entity-name orders --alter "
     "--add-config min.insync.replicas=99", 1,
     "error: min.insync.replicas=99 is larger than the replication factor 2: no write could succeed"),
    ("configs-default-topic", "configs --entity-type topics --entity-default --describe", 1,
     "error: --entity-default is for --entity-type brokers, clients and users"),
    ("configs-bad-type", "configs --entity-type groups --entity-name x --describe", 2,
     "praha configs: error: argument --entity-type: invalid choice: 'groups' (choose from 'topics', 'brokers', "
     "'clients', 'users')"),
    ("configs-quota-negative", "configs --entity-type clients --entity-name c --alter "
     "--add-config producer_byte_rate=-1", 1, "error: Quota producer_byte_rate must be greater than 0"),
    ("configs-quota-zero", "configs --entity-type users --entity-default --alter "
     "--add-config consumer_byte_rate=0", 1, "error: Quota consumer_byte_rate must be greater than 0"),
    ("configs-quota-not-a-number", "configs --entity-type clients --entity-name c --alter "
     "--add-config producer_byte_rate=fast", 1, "error: Cannot parse quota configuration value for "
     "producer_byte_rate: fast"),
    ("configs-quota-fraction", "configs --entity-type clients --entity-name c --alter "
     "--add-config producer_byte_rate=10.5", 1, "error: Configuration producer_byte_rate must be a LONG value"),
    ("configs-quota-unknown-key", "configs --entity-type clients --entity-name c --alter "
     "--add-config retention.ms=5", 1, "error: Invalid config(s): retention.ms; clients take consumer_byte_rate, "
     "controller_mutation_rate, producer_byte_rate, request_percentage"),
    ("configs-quota-delete-unset", "configs --entity-type clients --entity-name c --alter "
     "--delete-config producer_byte_rate", 1, "error: Invalid config(s): producer_byte_rate (not set for client-id "
     "'c')"),
    ("configs-quota-no-name", "configs --entity-type clients --alter --add-config producer_byte_rate=1", 1,
     "error: Exactly one entity name must be specified for every entity type"),
    ("configs-quota-with-topic", "configs --entity-type users --entity-name u --entity-type topics "
     "--entity-name orders --describe", 1, "error: Unexpected entity type topics: only users and clients go together"),
    ("configs-quota-twice", "configs --entity-type clients --entity-name a --entity-type clients --entity-name b "
     "--describe", 1, "error: --entity-type clients given twice"),
    ("configs-quota-empty-name", "configs --entity-type users --entity-name= --alter "
     "--add-config producer_byte_rate=1", 1, "error: Empty user not supported"),
    ("configs-quota-all", "configs --entity-type clients --describe --all", 1,
     "error: --all is for topics and brokers"),
    ("configs-all-with-alter", "configs --entity-type topics --entity-name orders --alter --all "
     "--add-config retention.ms=1", 1, "error: --all goes with --describe"),
    ("configs-bootstrap-without-all", "configs --entity-type topics --entity-name orders --describe "
     "--bootstrap-server 127.0.0.1:1", 1, "error: --bootstrap-server goes with --describe --all; the other forms "
     "write and read ZooKeeper (--zookeeper or --dir)"),
    ("configs-two-names", "configs --entity-type topics --entity-name orders --entity-name other --describe", 1,
     "error: give one of --entity-name and --entity-default"),
    ("configs-no-action", "configs --entity-type topics --entity-name orders", 2,
     "praha configs: error: one of the arguments --describe --alter is required"),
    # ---- groups (kafka-consumer-groups' option rules and refusals)
    ("groups-no-action", "groups --group g", 2,
     "praha groups: error: one of the arguments --list --describe --reset-offsets --delete --delete-offsets "
     "is required"),
    ("groups-two-actions", "groups --list --delete", 2,
     "praha groups: error: argument --delete: not allowed with argument --list"),
    ("groups-describe-no-group", "groups --describe", 1,
     "error: Option --describe takes one of these options: --all-groups, --group"),
    ("groups-describe-two-views", "groups --describe --group g --members --offsets", 1,
     "error: Option --describe takes at most one of these options: --members, --offsets, --state"),
    ("groups-describe-state-value", "groups --describe --group g --state Stable", 1,
     "error: Option --describe does not take a value for --state"),
    ("groups-group-and-all-groups", "groups --describe --group g --all-groups", 1,
     "error: Option --group is not valid with --all-groups"),
    ("groups-describe-with-topic", "groups --describe --group g --topic orders", 1,
     "error: Option --topic is only valid with --reset-offsets or --delete-offsets"),
    ("groups-members-without-describe", "groups --list --members", 1,
     "error: Option --members is only valid with --describe"),
    ("groups-verbose-without-members", "groups --describe --group g --verbose", 1,
     "error: Option --verbose goes with --describe --members"),
    ("groups-empty-group", "groups --describe --group ''", 1, "error: a group id cannot be empty"),
    ("groups-list-bad-state", "groups --list --state Stable,Sleepy", 1,
     "error: Invalid state list 'Stable,Sleepy'. Valid states are: PreparingRebalance, CompletingRebalance, "
     "Stable, Dead, Empty, Assigning, Reconciling"),
    ("groups-bad-bootstrap", "groups --list --bootstrap-server nohost", 2,
     "praha groups: error: argument --bootstrap-server: expected HOST:PORT[,HOST:PORT...][/chroot], got 'nohost'"),
    ("zookeeper-start-no-cluster", "zookeeper start --dir {f:}/nowhere", 1,
     "error: no cluster in {f:}/nowhere (run `praha cluster up --dir {f:}/nowhere` first)"),
    ("delete-records-not-json", "delete-records --offset-json-file {f:bad.json}", 1,
     "error: the offset JSON file is not JSON: Expecting property name enclosed in double quotes: "
     "line 1 column 2 (char 1)"),
    ("delete-records-version", "delete-records --offset-json-file {f:v2.json}", 1,
     "error: unsupported offset JSON version 2 (only 1)"),
    ("delete-records-no-file", "delete-records --offset-json-file {f:missing.json}", 1,
     "error: cannot read {f:missing.json}: No such file or directory"),
    ("delete-records-no-offset", "delete-records --offset-json-file {f:unknown_topic.json}", 1,
     "error: partitions[0]: expected topic (string), partition and offset (integers)"),
    ("log-dirs-no-describe", "log-dirs --broker-list 1", 2,
     "praha log-dirs: error: the following arguments are required: --describe"),
    ("log-dirs-bad-brokers", "log-dirs --describe --broker-list a,b", 2,
     "praha log-dirs: error: argument --broker-list: expected broker ids like 1,2,3, got 'a,b'"),
    ("log-dirs-dead-broker", "log-dirs --describe --broker-list 9", 1,
     "error: broker 9: broker 9 is not alive (live: [1, 2, 3])"),
    ("api-versions-bad-bootstrap", "api-versions --bootstrap-server nohost", 2,
     "praha api-versions: error: argument --bootstrap-server: "
     "expected HOST:PORT[,HOST:PORT...][/chroot], got 'nohost'"),
    ("api-versions-unknown-option", "api-versions --all", 2,
     "praha: error: unrecognized arguments: --all"),
    ("groups-reset-no-scenario", "groups --reset-offsets --group g --topic orders", 1,
     "error: Option --reset-offsets requires one of the following scenarios: --to-earliest, --to-latest, "
     "--to-current, --to-offset, --shift-by, --to-datetime, --by-duration, --from-file"),
    ("groups-reset-no-scope", "groups --reset-offsets --group g --to-earliest", 1,
     "error: One of the reset scopes should be defined: --all-topics, --topic."),
    ("groups-reset-two-scopes", "groups --reset-offsets --group g --topic orders --all-topics --to-earliest", 1,
     "error: Option --topic is not valid with --all-topics"),
    ("groups-reset-two-scenarios", "groups --reset-offsets --group g --topic orders --to-earliest --to-latest", 2,
     "praha groups: error: argument --to-latest: not allowed with argument --to-earliest"),
    ("groups-reset-dry-run-and-execute", "groups --reset-offsets --group g --topic orders --to-earliest --dry-run "
     "--execute", 2, "praha groups: error: argument --execute: not allowed with argument --dry-run"),
    ("groups-reset-offset-not-int", "groups --reset-offsets --group g --topic orders --to-offset x", 2,
     "praha groups: error: argument --to-offset: invalid int value: 'x'"),
    ("groups-reset-datetime-without-t", "groups --reset-offsets --group g --topic orders --to-datetime 2024-01-01",
     1, "error: Error parsing timestamp '2024-01-01'. It does not contain a 'T' according to ISO8601 format"),
    ("groups-reset-bad-datetime", "groups --reset-offsets --group g --topic orders --to-datetime 2024-13-01T00:00:00",
     1, "error: Error parsing timestamp '2024-13-01T00:00:00': month must be in 1..12"),
    ("groups-reset-bad-duration", "groups --reset-offsets --group g --topic orders --by-duration 1h", 1,
     "error: Text '1h' cannot be parsed to a Duration (expected PnDTnHnMnS, e.g. PT1H30M)"),
    ("groups-reset-bad-partition", "groups --reset-offsets --group g --topic orders:x --to-earliest", 1,
     "error: Invalid partition 'x' specified in topic arg 'orders:x'"),
    ("groups-reset-options-without-reset", "groups --describe --group g --to-earliest", 1,
     "error: Options --to-*, --shift-by, --by-duration, --from-file, --all-topics, --export, --dry-run and "
     "--execute go with --reset-offsets"),
    ("groups-delete-with-topic", "groups --delete --group g --topic orders", 1,
     "error: The consumer does not support topic-specific offset deletion from a consumer group."),
    ("groups-delete-offsets-no-topic", "groups --delete-offsets --group g", 1,
     "error: Option --delete-offsets takes the following options: --group (exactly one), --topic"),
    ("groups-delete-offsets-two-groups", "groups --delete-offsets --group g --group h --topic orders", 1,
     "error: Option --delete-offsets takes the following options: --group (exactly one), --topic"),
    ("groups-list-with-group", "groups --list --group g", 1, "error: Option --list does not take --group or "
     "--all-groups"),
    # these reach the cluster (its group coordinator)
    ("groups-describe-unknown", "groups --describe --group nosuch", 1,
     "error: Consumer group 'nosuch' does not exist."),
    ("groups-reset-unknown-topic", "groups --reset-offsets --group g --topic nosuch --to-earliest --dry-run", 1,
     "error: Topic 'nosuch' does not exist."),
    ("groups-reset-unknown-partition", "groups --reset-offsets --group g --topic orders:9 --to-earliest --dry-run",
     1, "error: Partition orders-9 does not exist (topic orders has 3 partitions)"),
    ("groups-shift-without-commit", "groups --reset-offsets --group g --topic orders --shift-by 1 --dry-run", 1,
     "error: Cannot shift offset for partition orders-0 since there is no current committed offset"),
    ("groups-delete-unknown", "groups --delete --group nosuch", 1,
     "error: Group 'nosuch' could not be deleted: The group id does not exist."),
    ("groups-no-cluster", "groups --list --dir {f:nowhere}", 1,
     "error: no cluster in {f:nowhere} (run `praha cluster up --dir {f:nowhere}` first)"),
    # ---- transactions (kafka-transactions' options)
    ("transactions-no-action", "transactions --topic orders", 2,
     "praha transactions: error: one of the arguments --list --describe --describe-producers --find-hanging "
     "--abort is required"),
    ("transactions-two-actions", "transactions --list --abort", 2,
     "praha transactions: error: argument --abort: not allowed with argument --list"),
    ("transactions-describe-no-id", "transactions --describe", 1, "error: --describe requires --transactional-id"),
    ("transactions-abort-no-coordinator-epoch", "transactions --abort --topic orders --partition 0 --producer-id 1 "
     "--producer-epoch 0", 1,
     "error: --abort requires either --start-offset or all of --producer-id, --producer-epoch and --coordinator-epoch"),
    ("transactions-list-with-topic", "transactions --list --topic orders", 1, "error: --list does not take --topic"),
    ("transactions-negative-partition", "transactions --describe-producers --topic orders --partition -1", 2,
     "praha transactions: error: argument --partition: must be >= 0, got -1"),
    ("transactions-find-hanging-no-broker", "transactions --find-hanging", 1,
     "error: --find-hanging requires --broker-id or --topic"),
    # these reach the cluster
    ("transactions-describe-unknown", "transactions --describe --transactional-id nosuch", 1,
     "error: Transactional id 'nosuch' not found: The transactionalId could not be found."),
    ("transactions-producers-unknown-partition", "transactions --describe-producers --topic orders --partition 9", 1,
     "error: Partition orders-9 does not exist (topic orders has 3 partitions)"),
    ("transactions-abort-unknown-topic", "transactions --abort --topic nosuch --partition 0 --producer-id 1 "
     "--producer-epoch 0 --coordinator-epoch 0", 1, "error: Topic 'nosuch' does not exist."),
    # ---- broker / cluster
    ("broker-start-unknown", "broker start 99", 1, "error: no broker 99 in {dir} (brokers: [1, 2, 3])"),
    ("broker-stop-unknown", "broker stop 99", 1, "error: no broker 99 in {dir} (brokers: [1, 2, 3])"),
    ("broker-kill-unknown", "broker kill 99", 1, "error: no broker 99 in {dir} (brokers: [1, 2, 3])"),
    ("broker-start-running", "broker start 1", 1, "error: broker 1 is already running (pid {pid1})"),
    ("broker-start-missing-config", "broker start --config {f:missing.json}", 1,
     "error: cannot read config file {f:missing.json}: No such file or directory"),
    ("broker-start-id-and-config", "broker start 1 --config {f:bad.json}", 1,
     "error: give either --config (run a broker here) or a broker ID of a local cluster, not both"),
    ("cluster-up-zero-brokers", "cluster up --brokers 0 --dir {f:other}", 1, "error: --brokers must be at least 1"),
    ("cluster-up-running", "cluster up --brokers 3", 1,
     "error: a cluster is already running in {dir} (brokers [1, 2, 3]); run `praha cluster down` first or use "
     "another --dir"),
    ("cluster-status-no-cluster", "cluster status --dir {f:nowhere}", 1,
     "error: no cluster in {f:nowhere} (run `praha cluster up --dir {f:nowhere}` first)"),
    ("cluster-down-no-cluster", "cluster down --dir {f:nowhere}", 1,
     "error: no cluster in {f:nowhere} (run `praha cluster up --dir {f:nowhere}` first)"),
    ("cluster-status-bad-zookeeper", "cluster status --zookeeper nohostport", 2,
     "praha cluster status: error: argument --zookeeper: expected HOST:PORT[,HOST:PORT...][/chroot], "
     "got 'nohostport'"),
    ("cluster-status-bad-port", "cluster status --zookeeper 127.0.0.1:99999", 2,
     "praha cluster status: error: argument --zookeeper: expected HOST:PORT[,HOST:PORT...][/chroot], "
     "got '127.0.0.1:99999'"),
    # ---- produce / consume / chaos
    ("produce-bad-acks", "produce --topic orders --acks 2", 2,
     "praha produce: error: argument --acks: invalid choice: '2' (choose from 'all', '-1', '0', '1')"),
    ("consume-negative-max-messages", "consume --topic orders --max-messages -1", 2,
     "praha consume: error: argument --max-messages: must be >= 1, got -1"),
    ("consume-unknown-topic", "consume --topic nosuch --max-messages 1 --idle-timeout 1", 1,
     'error: topic nosuch not found (KafkaError{code=UNKNOWN_TOPIC_OR_PART,val=3,str="Broker: Unknown topic '
     'or partition"})'),
    ("chaos-too-few-brokers", "chaos --brokers 2 --faults 1", 1,
     "error: a chaos campaign needs at least 3 brokers (RF 3 topics)"),
    ("chaos-negative-faults", "chaos --faults -1", 2, "praha chaos: error: argument --faults: must be >= 0, got -1"),
    ("chaos-unknown-kind", "chaos --kinds kill,meteor", 2,
     "praha chaos: error: argument --kinds: unknown fault kinds ['meteor']; choose from "
     "kill,kill_controller,pause,zk_expire,controlled_restart,stutter,stale_controller,forged_controller,long_pause,"
     "member_kill,coordinator_kill,zk_member_kill,full_disk,forged_zk_write,partition,one_way,flaky_link"),
    ("chaos-bad-ensemble", "chaos --zk-ensemble 2", 2,
     "praha chaos: error: argument --zk-ensemble: invalid choice: 2 (choose from 1, 3)"),
    # ---- analyze (PySpark job; these are refused before Spark starts)
    ("analyze-no-path", "analyze state-change-log --path {f:nowhere}", 1, "error: --path {f:nowhere} does not exist"),
    ("analyze-bad-format", "analyze state-change-log --path {dir} --format xml", 1,
     "error: --format takes csv and/or parquet, not xml"),
    ("analyze-no-logs", "analyze state-change-log --path {f:}", 1, "error: no state-change.log files under {f:}"),
    # ---- acls (nothing is written when refused)
    ("acls-add-no-resource", "acls --add --allow-principal User:a --operation Read", 1,
     "error: --add needs a resource: --topic, --group, --transactional-id or --cluster"),
    ("acls-add-no-principal", "acls --add --topic orders --operation Read", 1,
     "error: --add needs --allow-principal or --deny-principal"),
    ("acls-bad-operation", "acls --add --topic orders --allow-principal User:a --operation Fly", 1,
     "error: unknown operation 'Fly'"),
    ("acls-bad-principal", "acls --add --topic orders --allow-principal alice --operation Read", 1,
     "error: principal 'alice' must be of the form User:NAME"),
    ("acls-add-match", "acls --add --topic orders --allow-principal User:a --resource-pattern-type match", 1,
     "error: --add takes --resource-pattern-type literal or prefixed"),
    ("configs-users-no-password", "configs --entity-type users --entity-name u --alter "
     "--add-config SCRAM-SHA-256=[iterations=8192]", 1,
     "error: SCRAM-SHA-256: expected [iterations=N,password=SECRET], got [iterations=8192]"),
    ("configs-users-few-iterations", "configs --entity-type users --entity-name u --alter "
     "--add-config SCRAM-SHA-512=[iterations=10,password=p]", 1,
     "error: SCRAM-SHA-512: iterations must be between 4096 and 16384, got 10"),
    ("configs-users-scram-default", "configs --entity-type users --entity-default --alter "
     "--add-config SCRAM-SHA-256=[password=p]", 1, "error: SCRAM credentials need one --entity-name USER"),
    ("acls-remove-no-resource", "acls --remove --allow-principal User:a", 1,
     "error: --remove needs a resource: --topic, --group, --transactional-id or --cluster"),
    # ---- schemas (the cluster's Schema Registry; a refused request stores nothing)
    # ---- console (refused before it serves anything)
    ("console-negative-port", "console --port -1", 2, "praha console: error: argument --port: must be >= 0, got -1"),
    ("console-https-without-key", "console --certfile {f:cert.pem}", 1,
     "error: HTTPS needs both --certfile and --keyfile"),
    ("console-sasl-without-mechanism", "console --bootstrap-server 127.0.0.1:1 --security-protocol SASL_SSL", 1,
     "error: --security-protocol SASL_SSL needs --sasl-mechanism"),
    ("schemas-show-no-subject", "schemas show", 1, "error: schemas show needs --subject"),
    ("schemas-register-no-file", "schemas register --subject s", 1, "error: schemas register needs --schema-file"),
    ("schemas-register-missing-file", "schemas register --subject s --schema-file {f:nowhere.avsc}", 1,
     "error: cannot read {f:nowhere.avsc}: [Errno 2] No such file or directory: '{f:nowhere.avsc}'"),
    ("schemas-register-invalid", "schemas register --subject s --schema-file {f:bad.json}", 1,
     f"error: Invalid schema: JSONDecodeError: {NO_JSON} (HTTP 422, error code 42201)"),
    ("schemas-register-bad-reference", "schemas register --subject s --schema-file {f:bad.json} --reference x", 1,
     "error: --reference: expected NAME=SUBJECT:VERSION, got 'x'"),
    ("schemas-show-unknown", "schemas show --subject nosuch", 1,
     "error: Subject 'nosuch' not found. (HTTP 404, error code 40401)"),
    ("schemas-show-version-0", "schemas show --subject nosuch --version 0", 1,
     "error: The specified version '0' is not a valid version id. Allowed values are between [1, 2^31-1] and the "
     "string \"latest\" (HTTP 422, error code 42202)"),
    ("schemas-delete-unknown", "schemas delete --subject nosuch --permanent", 1,
     "error: Subject 'nosuch' not found. (HTTP 404, error code 40401)"),
    # ---- zookeeper-security-migration (the misuse cluster's tree is open: nothing changes when refused)
    ("zk-migration-bad-mode", "zookeeper-security-migration --zookeeper.acl maybe", 2,
     "praha zookeeper-security-migration: error: argument --zookeeper.acl: invalid choice: 'maybe' "
     "(choose from 'secure', 'unsecure')"),
    ("zk-migration-secure-anonymous", "zookeeper-security-migration --zookeeper.acl secure", 1,
     "error: --zookeeper.acl secure needs this session to log in to ZooKeeper as the brokers do (a JAAS Client "
     "section via --zk-tls-config-file or KAFKA_OPTS, or PRAHA_ZOOKEEPER_DIGEST); otherwise nobody could change "
     "the tree afterwards"),
    ("zk-client-config-missing", "zookeeper-security-migration --zookeeper.acl unsecure --zk-tls-config-file "
     "{f:nowhere}", 1, "error: cannot read ZooKeeper client config {f:nowhere}: No such file or directory"),
    ("zk-client-tls-no-truststore", "topics list --zk-tls-config-file {f:zk-tls-only.properties}", 1,
     "error: zookeeper.ssl.client.enable=true needs zookeeper.ssl.truststore.location (the CA that signed "
     "ZooKeeper's certificate, PEM)"),
    ("zk-client-jks", "topics list --zk-tls-config-file {f:zk-jks.properties}", 1,
     "error: zookeeper.ssl.truststore.type: praha reads PEM files only"),
]

def wants_dir(argv: list[str]) -> bool:
    """Commands that take --dir get the misuse cluster's unless the case names another target."""
    return not ({"--dir", "--zookeeper"} & set(argv) or argv[0] in ("chaos", "analyze")
                or argv[:3] == ["broker", "start", "--config"])


def commands() -> set[str]:
    """Every `praha` command, with its subcommand where it has them ("topics create", "chaos")."""
    from praha.cli.main import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command")
    out = set()
    for name, p in sub.choices.items():
        nested = [a for a in p._actions if getattr(a, "choices", None) and a.dest == "sub"]
        out |= {f"{name} {s}" for s in nested[0].choices} if nested else {name}
    return out


def command_of(argv_text: str) -> str:
    words = argv_text.split()
    return " ".join(words[:2]) if words[0] in ("topics", "reassign", "broker", "cluster", "analyze", "zookeeper") \
        else words[0]


@pytest.fixture(scope="module")
def env(misuse_cluster):
    for name, text in FILES.items():
        misuse_cluster.file(name, text)
    return misuse_cluster


def expand(text: str, env) -> str:
    out = (text.replace("{dir}", env.dir).replace("{f:}", str(env.files)).replace("{long}", LONG)
           .replace("{pid1}", str(env.pid(1))))
    while "{f:" in out:
        start = out.index("{f:")
        end = out.index("}", start)
        out = out[:start] + str(env.files / out[start + 3:end]) + out[end + 1:]
    return out


def run_cli(argv: list[str], capsys) -> tuple[int, str]:
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err.strip().splitlines()
    return code, err[-1] if err else ""


@pytest.mark.parametrize(("case_id", "command", "code", "message"), CATALOGUE, ids=[c[0] for c in CATALOGUE])
def test_misuse(env, capsys, case_id, command, code, message):
    import shlex

    if command_of(command) not in commands():
        pytest.skip(f"`praha {command_of(command)}` does not exist in this build")
    argv = shlex.split(expand(command, env))
    if wants_dir(argv):
        argv += ["--dir", env.dir]
    got_code, last = run_cli(argv, capsys)
    assert (got_code, last) == (code, expand(message, env))


def test_consume_refuses_a_negative_partition(env, capsys):
    code, last = run_cli(["consume", "--topic", "orders", "--partition", "-1", "--max-messages", "1",
                          "--idle-timeout", "1", "--dir", env.dir], capsys)
    assert code != 0
    assert "partition" in last


def test_the_catalogue_covers_every_command():
    """Every subcommand praha has appears in the catalogue (a new one must add its misuse cases)."""
    covered = {command_of(c[1]) for c in CATALOGUE}
    missing = commands() - covered - {"reassign list", "topics list", "broker start"}
    assert not missing, f"commands without misuse cases: {sorted(missing)}"




@pytest.mark.slow
def test_analyze_refuses_a_file_as_path(env, capsys):
    if "analyze state-change-log" not in commands():
        pytest.skip("no analyze command in this build")
    code, last = run_cli(["analyze", "state-change-log", "--path", str(env.files / "bad.json")], capsys)
    assert code == 1
    assert last.startswith("error: ")


def test_analyze_refuses_zero_cores(env, capsys):
    if "analyze state-change-log" not in commands():
        pytest.skip("no analyze command in this build")
    code, last = run_cli(["analyze", "state-change-log", "--path", env.dir, "--cores", "0"], capsys)
    assert code == 1
    assert last.startswith("error: ")


def test_broker_start_with_an_unusable_log_dir_says_so_in_one_line(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    config = tmp_path / "server.properties"
    config.write_text(f"broker.id=1\nzookeeper.connect=127.0.0.1:1\nlog.dirs={blocker}/data\n"
                      "listeners=PLAINTEXT://127.0.0.1:0\n")
    code, last = run_cli(["broker", "start", "--config", str(config)], capsys)
    assert (code, last) == (1, f"error: log.dirs: cannot use '{blocker}/data': Not a directory")
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("line", "message"), [
    # the key as given, as Kafka's KafkaConfig names it (it was the topic setting's name)
    ("log.cleanup.policy=shred", "error: Invalid value shred for configuration log.cleanup.policy: "
                                 "String must be one of: compact, delete"),
    ("max.connections.per.ip.overrides=nonsense",
     "error: max.connections.per.ip.overrides: expected host:count, got 'nonsense'"),
    ("schema.registry.listeners=ftp://127.0.0.1:8081",
     "error: schema.registry.listeners: expected http://HOST:PORT or https://HOST:PORT, got 'ftp://127.0.0.1:8081'"),
])
def test_broker_start_checks_derived_settings_before_starting(tmp_path, capsys, line, message):
    """Settings the broker derives (log defaults, connection limits) are refused before it
    connects anywhere: ZooKeeper at 127.0.0.1:1 is never tried."""
    config = tmp_path / "server.properties"
    config.write_text(f"broker.id=1\nzookeeper.connect=127.0.0.1:1\nlog.dirs={tmp_path}/data\n"
                      f"listeners=PLAINTEXT://127.0.0.1:0\n{line}\n")
    code, last = run_cli(["broker", "start", "--config", str(config)], capsys)
    assert (code, last) == (1, message)
