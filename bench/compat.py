"""The API table of docs/compatibility.md: every API a Kafka 3.9 broker in ZooKeeper mode
serves, next to what praha serves (`praha.broker.handlers.routes.SERVED_VERSIONS`).

Kafka's list is the request schemas of 3.9.0 whose `listeners` include `zkBroker`
(clients/src/main/resources/common/message/*Request.json), kept here as data because the
Kafka source is not part of praha. `tests/test_compat_doc.py` fails when the page and the
broker's table drift apart; run this to rewrite the section.

Usage: .venv/bin/python bench/compat.py [--check]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "compatibility.md"
BEGIN, END = "<!-- api-table:begin -->", "<!-- api-table:end -->"

#: api key -> (name, versions) of Kafka 3.9.0's ZooKeeper-mode broker
KAFKA_39_ZK: dict[int, tuple[str, str]] = {
    0: ("Produce", "0-11"),
    1: ("Fetch", "0-17"),
    2: ("ListOffsets", "0-9"),
    3: ("Metadata", "0-12"),
    4: ("LeaderAndIsr", "0-7"),
    5: ("StopReplica", "0-4"),
    6: ("UpdateMetadata", "0-8"),
    7: ("ControlledShutdown", "0-3"),
    8: ("OffsetCommit", "0-9"),
    9: ("OffsetFetch", "0-9"),
    10: ("FindCoordinator", "0-6"),
    11: ("JoinGroup", "0-9"),
    12: ("Heartbeat", "0-4"),
    13: ("LeaveGroup", "0-5"),
    14: ("SyncGroup", "0-5"),
    15: ("DescribeGroups", "0-5"),
    16: ("ListGroups", "0-5"),
    17: ("SaslHandshake", "0-1"),
    18: ("ApiVersions", "0-4"),
    19: ("CreateTopics", "0-7"),
    20: ("DeleteTopics", "0-6"),
    21: ("DeleteRecords", "0-2"),
    22: ("InitProducerId", "0-5"),
    23: ("OffsetForLeaderEpoch", "0-4"),
    24: ("AddPartitionsToTxn", "0-5"),
    25: ("AddOffsetsToTxn", "0-4"),
    26: ("EndTxn", "0-4"),
    27: ("WriteTxnMarkers", "0-1"),
    28: ("TxnOffsetCommit", "0-4"),
    29: ("DescribeAcls", "0-3"),
    30: ("CreateAcls", "0-3"),
    31: ("DeleteAcls", "0-3"),
    32: ("DescribeConfigs", "0-4"),
    33: ("AlterConfigs", "0-2"),
    34: ("AlterReplicaLogDirs", "0-2"),
    35: ("DescribeLogDirs", "0-4"),
    36: ("SaslAuthenticate", "0-2"),
    37: ("CreatePartitions", "0-3"),
    38: ("CreateDelegationToken", "0-3"),
    39: ("RenewDelegationToken", "0-2"),
    40: ("ExpireDelegationToken", "0-2"),
    41: ("DescribeDelegationToken", "0-3"),
    42: ("DeleteGroups", "0-2"),
    43: ("ElectLeaders", "0-2"),
    44: ("IncrementalAlterConfigs", "0-1"),
    45: ("AlterPartitionReassignments", "0"),
    46: ("ListPartitionReassignments", "0"),
    47: ("OffsetDelete", "0"),
    48: ("DescribeClientQuotas", "0-1"),
    49: ("AlterClientQuotas", "0-1"),
    50: ("DescribeUserScramCredentials", "0"),
    51: ("AlterUserScramCredentials", "0"),
    56: ("AlterPartition", "0-3"),
    57: ("UpdateFeatures", "0-1"),
    58: ("Envelope", "0"),
    60: ("DescribeCluster", "0-1"),
    61: ("DescribeProducers", "0"),
    65: ("DescribeTransactions", "0"),
    66: ("ListTransactions", "0-1"),
    67: ("AllocateProducerIds", "0"),
    68: ("ConsumerGroupHeartbeat", "0"),
    69: ("ConsumerGroupDescribe", "0"),
}

#: APIs brokers send each other, or the controller sends (not for clients and tools)
INTER_BROKER = {4, 5, 6, 7, 27, 56, 58, 67}
#: whose issue covers what praha does not serve yet
PLANNED = {
    17: "security", 36: "security", 29: "security", 30: "security", 31: "security", 50: "security", 51: "security",
    38: "security", 39: "security", 40: "security", 41: "security",
    57: "not planned (feature flags)", 56: "not used (the controller writes ISR changes itself)",
    58: "not used (KRaft migration)", 67: "not used (KRaft migration)",
}


def table() -> str:
    sys.path.insert(0, str(ROOT))
    from praha.broker.handlers.routes import SERVED_VERSIONS

    lines = ["| key | API | Kafka 3.9 | praha | note |", "| --- | --- | --- | --- | --- |"]
    for key, (name, versions) in sorted(KAFKA_39_ZK.items()):
        served = SERVED_VERSIONS.get(key)
        ours = f"{served[0]}-{served[1]}" if served else "—"
        note = "inter-broker" if key in INTER_BROKER else ""
        if served is None:
            note = ", ".join(x for x in (note, PLANNED.get(key, "not yet")) if x)
        lines.append(f"| {key} | {name} | {versions} | {ours} | {note} |")
    served_client = sum(1 for k in KAFKA_39_ZK if k in SERVED_VERSIONS and k not in INTER_BROKER)
    client = sum(1 for k in KAFKA_39_ZK if k not in INTER_BROKER)
    lines.append("")
    lines.append(f"praha serves {served_client} of the {client} client-facing APIs of Kafka 3.9 in ZooKeeper mode.")
    return "\n".join(lines)


def section(doc: str) -> str:
    head, _, rest = doc.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="exit 1 if the page is not current (writes nothing)")
    args = p.parse_args()
    doc = DOC.read_text()
    new = section(doc)
    if args.check:
        return 0 if new == doc else 1
    DOC.write_text(new)
    print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
