"""Cluster status read straight from ZooKeeper (what `praha cluster status` prints).

Everything here is read-only and works against any cluster given its ZooKeeper connect
string. Corrupt znodes are reported in the output, never raised.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from kazoo.exceptions import NoAuthError, NoNodeError
from kazoo.security import Permissions

from praha.common import TopicPartition
from praha.errors import ZNodeDecodeError
from praha.zk.auth import SECURE_ROOTS, SENSITIVE_ROOTS, ZkAuth, sensitive_path
from praha.zk.store import ZkStore


@contextlib.contextmanager
def zk_session(connect: str, timeout_ms: int = 10000, auth: ZkAuth | None = None) -> Iterator[ZkStore]:
    store = ZkStore(connect, session_timeout_ms=timeout_ms, connection_timeout_ms=timeout_ms, auth=auth)
    store.start()
    try:
        yield store
    finally:
        store.stop()


def cluster_status(connect: str, include_topics: bool = True, store: ZkStore | None = None,
                   auth: ZkAuth | None = None) -> dict[str, Any]:
    if store is None:
        with zk_session(connect, auth=auth) as s:
            return cluster_status(connect, include_topics, s)
    problems: list[str] = []
    try:
        cid = store.get_controller_id()
    except ZNodeDecodeError as e:
        cid = None
        problems.append(str(e))
    try:
        epoch = store.get_controller_epoch()
    except ZNodeDecodeError as e:
        epoch = None
        problems.append(str(e))
    brokers, corrupt = store.get_live_brokers()
    problems.extend(str(e) for e in corrupt.values())
    out: dict[str, Any] = {
        "zookeeper": connect,
        "zookeeper_security": zookeeper_security(store),
        "controller": {"id": -1 if cid is None else cid, "epoch": -1 if epoch is None else epoch[0]},
        "brokers": [
            {"id": b.id, "epoch": b.epoch, "host": b.host, "port": b.port, "rack": b.rack}
            for b in sorted(brokers.values(), key=lambda b: b.id)
        ],
    }
    if include_topics:
        out["topics"] = topics_status(store, set(brokers), problems)
    if problems:
        out["problems"] = problems
    return out


def zookeeper_security(store: ZkStore) -> dict[str, Any]:
    """How we reach ZooKeeper, and whether the tree is protected: the roots Kafka secures
    that anyone may change (world write, create or delete), and sensitive ones anyone may read."""
    out = store.auth.describe()
    open_paths = []
    for path in (*SECURE_ROOTS, *SENSITIVE_ROOTS):
        try:
            acls = store.client.get_acls(path)[0]
        except (NoNodeError, NoAuthError):  # NoAuth: not even READ for us, so not for anyone either
            continue
        world = sum(a.perms for a in acls if a.id.scheme == "world")
        if world & ~Permissions.READ or (sensitive_path(path) and world & Permissions.READ):
            open_paths.append(path)
    out["acl_protected"] = not open_paths
    if open_paths:
        out["open_paths"] = open_paths
    return out


def topics_status(store: ZkStore, live: set[int], problems: list[str]) -> dict[str, Any]:
    topics = store.get_all_topics()
    assignments, bad = store.get_topic_assignments(topics)
    problems.extend(str(e) for e in bad.values())
    tps = [TopicPartition(t, p) for t, a in assignments.items() for p in a.partitions]
    states, bad_states = store.get_partition_states(tps)
    problems.extend(str(e) for e in bad_states.values())
    marked = set(store.get_topics_marked_for_deletion())
    out: dict[str, Any] = {}
    for t in sorted(assignments):
        parts = []
        for p in sorted(assignments[t].partitions):
            a = assignments[t].partitions[p]
            st = states.get(TopicPartition(t, p))
            li = st.leader_and_isr if st else None
            parts.append({
                "partition": p,
                "leader": li.leader if li else -1,
                "leader_epoch": li.leader_epoch if li else -1,
                "isr": list(li.isr) if li else [],
                "replicas": list(a.replicas),
                "adding_replicas": list(a.adding),
                "removing_replicas": list(a.removing),
                "offline_replicas": [r for r in a.replicas if r not in live],
                "under_replicated": li is not None and len(li.isr) < len(a.replicas),
                "offline": not li or li.leader not in live,
            })
        out[t] = {"partitions": parts, "marked_for_deletion": t in marked}
        if t in marked:
            # a deletion waits for every dead broker that still holds a replica of the topic
            out[t]["deletion_waiting_for_brokers"] = sorted(
                {r for a in assignments[t].partitions.values() for r in a.replicas} - live
            )
    return out
