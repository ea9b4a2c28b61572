"""Cluster status through any broker's Metadata API (`--bootstrap-server`).

ZooKeeper-only facts (controller epoch, broker epochs) are not in Metadata responses;
they are reported as -1 here. Use `--zookeeper` or `--dir` for those.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from praha.errors import PrahaError
from praha.protocol.client import BrokerConnection, api_versions
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.protocol.messages.gen.metadata import MetadataRequest


def fetch_metadata(bootstrap: str, topics: list[str] | None = None, timeout: float = 10.0,
                   security: ClientSecurity = PLAINTEXT) -> Any:
    """A MetadataResponse v12 from one broker (the kafka-python object)."""
    host, _, port = bootstrap.rpartition(":")
    conn = BrokerConnection(host, int(port), timeout=timeout, security=security)
    conn.connect()
    try:
        req_topics = (
            None if topics is None else [MetadataRequest.MetadataRequestTopic(name=t, topic_id=None) for t in topics]
        )
        return conn.send(MetadataRequest(topics=req_topics, allow_auto_topic_creation=False,
                                         include_cluster_authorized_operations=False,
                                         include_topic_authorized_operations=False), 12)
    finally:
        conn.close()


def status_via_bootstrap(bootstrap: str) -> dict[str, Any]:
    md = fetch_metadata(bootstrap)
    live = {b.node_id for b in md.brokers}
    topics = {}
    for t in md.topics:
        parts = []
        for p in sorted(t.partitions, key=lambda p: p.partition_index):
            parts.append({
                "partition": p.partition_index, "leader": p.leader_id, "leader_epoch": p.leader_epoch,
                "isr": list(p.isr_nodes), "replicas": list(p.replica_nodes),
                "offline_replicas": list(p.offline_replicas or []),
                "under_replicated": len(p.isr_nodes) < len(p.replica_nodes),
                "offline": p.leader_id not in live,
            })
        topics[t.name] = {"partitions": parts}
    return {
        "bootstrap_server": bootstrap,
        "zookeeper": "unknown (ask with --zookeeper)",
        "cluster_id": md.cluster_id,
        "controller": {"id": md.controller_id, "epoch": -1},
        "brokers": [{"id": b.node_id, "epoch": -1, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in sorted(md.brokers, key=lambda b: b.node_id)],
        "topics": topics,
    }


def add_offline_dir_replicas(topics: dict[str, Any], bootstraps: list[str], timeout: float = 5.0) -> bool:
    """Add to a ZooKeeper-built status (`topics_status`) the replicas Metadata reports offline:
    ZooKeeper knows dead brokers, only the controller knows replicas in a failed log directory
    of a live broker (it tells every broker). Asks the first broker that answers; False (and
    nothing added) if none does."""
    for bootstrap in bootstraps:
        try:
            md = fetch_metadata(bootstrap, timeout=timeout)
        except (OSError, PrahaError):
            continue
        for t in md.topics:
            info = topics.get(t.name)
            if info is None:
                continue
            by_partition = {p["partition"]: p for p in info["partitions"]}
            for mp in t.partitions:
                p = by_partition.get(mp.partition_index)
                if p is not None:
                    extra = [r for r in (mp.offline_replicas or []) if r not in p["offline_replicas"]]
                    p["offline_replicas"] = p["offline_replicas"] + extra
        return True
    return False


@dataclass(frozen=True, slots=True)
class BrokerApis:
    """What one broker answered to ApiVersions (or why it could not be asked)."""

    broker_id: int
    host: str
    port: int
    rack: str | None
    versions: dict[int, tuple[int, int]]
    error: str | None = None


def broker_api_versions(bootstrap: str, timeout: float = 10.0,
                        security: ClientSecurity = PLAINTEXT) -> list[BrokerApis]:
    """Every live broker's API versions (kafka-broker-api-versions): the brokers from one
    Metadata answer, then ApiVersions to each."""
    md = fetch_metadata(bootstrap.split(",")[0], [], timeout, security)
    out = []
    for b in sorted(md.brokers, key=lambda b: b.node_id):
        try:
            versions = api_versions(b.host, b.port, timeout, security=security)
            out.append(BrokerApis(b.node_id, b.host, b.port, b.rack, versions))
        except PrahaError as e:
            out.append(BrokerApis(b.node_id, b.host, b.port, b.rack, {}, str(e)))
    return out
