"""`meta.properties` in every log dir: which broker and cluster the data belongs to (Kafka's
ZooKeeper-mode BrokerMetadataCheckpoint, version 0).

At start-up, before any log is opened: 1. each dir's file is read (a missing or unreadable one
says nothing); 2. `check` refuses dirs of another broker or another cluster, or dirs that
disagree with each other, with Kafka's messages (the data of another broker must never be
served as this one's); after the logs are open: 3. the file is written to every live dir
whose file is missing or differs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from praha.errors import ConfigError
from praha.log.checkpoints import atomic_write

META_PROPERTIES = "meta.properties"


@dataclass(frozen=True, slots=True)
class BrokerMetadata:
    broker_id: int
    cluster_id: str | None


def parse(text: str) -> BrokerMetadata | None:
    """Java properties `version=0`, `broker.id`, `cluster.id` (None without a broker id)."""
    props: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        key, sep, value = line.partition("=")
        if sep:
            props[key.strip()] = value.strip()
    try:
        broker_id = int(props["broker.id"])
    except (KeyError, ValueError):
        return None
    return BrokerMetadata(broker_id, props.get("cluster.id") or None)


def format_meta(meta: BrokerMetadata) -> bytes:
    lines = ["#", "#praha", "version=0", f"broker.id={meta.broker_id}"]
    if meta.cluster_id:
        lines.append(f"cluster.id={meta.cluster_id}")
    return ("\n".join(lines) + "\n").encode()


def read_all(dirs: list[str]) -> dict[str, BrokerMetadata]:
    """The metadata found in each dir (dirs without a readable file are left out)."""
    found = {}
    for d in dirs:
        try:
            meta = parse((Path(d) / META_PROPERTIES).read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        if meta is not None:
            found[d] = meta
    return found


def check(found: dict[str, BrokerMetadata], broker_id: int, cluster_id: str | None) -> None:
    """ConfigError (Kafka's messages) if the dirs belong to another broker or cluster, or disagree."""
    if len(set(found.values())) > 1:
        raise ConfigError(
            "BrokerMetadata is not consistent across log.dirs. This could happen if multiple brokers shared a "
            "log directory (log.dirs) or partial data was manually copied from another broker. Found: "
            + ", ".join(f"{d} -> broker.id={m.broker_id}, cluster.id={m.cluster_id}" for d, m in sorted(found.items())))
    for meta in found.values():
        if meta.broker_id != broker_id:
            raise ConfigError(
                f"Configured broker.id {broker_id} doesn't match stored broker.id {meta.broker_id} in "
                "meta.properties. If you moved your data, make sure your configured broker.id matches. If you "
                "intend to create a new broker, you should remove all data in your data directories (log.dirs).")
        if cluster_id and meta.cluster_id and meta.cluster_id != cluster_id:
            raise ConfigError(
                f"The Cluster ID {cluster_id} doesn't match stored clusterId {meta.cluster_id} in "
                "meta.properties. The broker is trying to join the wrong cluster. Configured "
                "zookeeper.connect may be wrong.")


def write_missing(dirs: list[str], meta: BrokerMetadata, found: dict[str, BrokerMetadata]) -> list[tuple[str, OSError]]:
    """Write the file where it is missing or differs; returns the dirs that could not take it."""
    failed = []
    for d in dirs:
        if found.get(d) == meta:
            continue
        try:
            atomic_write(os.path.join(d, META_PROPERTIES), format_meta(meta))
        except OSError as e:
            failed.append((d, e))
    return failed
