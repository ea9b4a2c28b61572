"""Network faults between hosts of their own: which node drops which packets (pure).

Every node (ZooKeeper server `zk<i>`, broker `b<id>`) runs in a network namespace with its
own address; a fault is a set of nftables drop rules per node (praha/cluster/netns.py),
removed again when it heals. Clients and the harness live in the root namespace: packets
from them arrive from the bridge's address (`gateway`).

  partition  symmetric cuts, in one of six shapes (chosen by the seed):
             halves              the nodes split at random into two sides
             controller_from_zk  the controller cut from every ZooKeeper server, not from brokers
             leader_from_followers  a data partition's leader cut from its followers, not from ZooKeeper
             broker_from_zk      one broker cut from ZooKeeper only
             bridge              A – B – C: every node in A or C, one broker B between them; A and C
                                 cannot reach each other, B reaches both
             client_from_leader  a data partition's leader drops what clients (the root namespace) send
  one_way    one direction only: a broker stops receiving from its peers (brokers or ZooKeeper)
             while its own packets still arrive
  flaky_link one of two (seeded): a broker drops a share (10–40 %) of what arrives from some
             peers, at random (nftables `numgen random`); or what some peers and the clients
             send to its Kafka port is delayed (20–200 ms plus up to 1 s of jitter, so requests
             on different connections overtake each other): their connections are detoured
             through a delaying proxy in the broker's own namespace (this kernel has no
             `tc netem`; praha/testing/proxy.py)
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

from praha.cluster.netns import Drop

PARTITION_SHAPES = ("halves", "controller_from_zk", "leader_from_followers", "broker_from_zk", "bridge",
                    "client_from_leader")


@dataclass
class View:
    """What a network fault is planned against: nodes → address, the controller, and one
    data partition's leader and followers (broker ids; -1 / empty when unknown)."""
    addresses: dict[str, str]
    gateway: str
    controller: int = -1
    leader: int = -1
    followers: tuple[int, ...] = ()

    @property
    def brokers(self) -> list[str]:
        return sorted(n for n in self.addresses if n.startswith("b"))

    @property
    def zookeepers(self) -> list[str]:
        return sorted(n for n in self.addresses if n.startswith("zk"))


@dataclass(frozen=True)
class Detour:
    """New connections from `peers` to `node`'s Kafka port go through a delaying proxy."""
    node: str
    peers: tuple[str, ...]
    delay_ms: int
    jitter_ms: int


@dataclass
class NetPlan:
    """The drops per node, and what they mean (for the timeline and the report)."""
    shape: str
    drops: dict[str, list[Drop]] = field(default_factory=dict)
    sides: list[list[str]] = field(default_factory=list)
    #: does it cut a broker from ZooKeeper (so that its session is expected to expire)?
    cuts_zookeeper: bool = False
    detour: Detour | None = None

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {
            "shape": self.shape, "sides": self.sides,
            "drops": {n: [{"peers": list(d.peers) or "all", "inbound": d.inbound, "percent": d.percent}
                          for d in ds] for n, ds in sorted(self.drops.items())}}
        if self.detour is not None:
            out["detour"] = {"node": self.detour.node, "peers": list(self.detour.peers),
                             "delay_ms": self.detour.delay_ms, "jitter_ms": self.detour.jitter_ms}
        return out


def _cut(view: View, a: list[str], b: list[str], plan: NetPlan) -> None:
    """Symmetric: every node of `a` drops what comes from `b`, and the other way round."""
    for x, ys in ((a, b), (b, a)):
        peers = tuple(view.addresses[y] for y in ys)
        if peers:
            for n in x:
                plan.drops.setdefault(n, []).append(Drop(peers))
    plan.sides.append(sorted(a))
    plan.sides.append(sorted(b))


def plan_partition(view: View, rng: random.Random) -> NetPlan:
    shape = rng.choice(PARTITION_SHAPES)
    brokers, zks = view.brokers, view.zookeepers
    ctrl = f"b{view.controller}" if f"b{view.controller}" in view.addresses else rng.choice(brokers)
    leader = f"b{view.leader}" if f"b{view.leader}" in view.addresses else rng.choice(brokers)
    followers = [f"b{f}" for f in view.followers if f"b{f}" in view.addresses] or [b for b in brokers if b != leader]
    plan = NetPlan(shape)
    if shape == "halves":
        nodes = sorted(view.addresses)
        rng.shuffle(nodes)
        k = rng.randint(1, len(nodes) - 1)
        _cut(view, nodes[:k], nodes[k:], plan)
        plan.cuts_zookeeper = True
    elif shape == "controller_from_zk":
        _cut(view, [ctrl], zks, plan)
        plan.cuts_zookeeper = True
    elif shape == "leader_from_followers":
        _cut(view, [leader], followers, plan)
    elif shape == "broker_from_zk":
        others = [b for b in brokers if b != ctrl] or brokers
        _cut(view, [rng.choice(others)], zks, plan)
        plan.cuts_zookeeper = True
    elif shape == "bridge":
        middle = rng.choice(brokers)
        rest = [n for n in sorted(view.addresses) if n != middle]
        rng.shuffle(rest)
        k = rng.randint(1, len(rest) - 1)
        _cut(view, rest[:k], rest[k:], plan)
        plan.sides.insert(1, [middle])
        plan.cuts_zookeeper = True
    else:  # client_from_leader
        plan.drops[leader] = [Drop((view.gateway,))]
        plan.sides = [[leader], ["clients"]]
    return plan


def plan_one_way(view: View, rng: random.Random) -> NetPlan:
    """A broker receives nothing from its peers (all brokers, or all ZooKeeper servers, or
    both); what it sends still arrives."""
    victim = rng.choice(view.brokers)
    which = rng.choice(("brokers", "zookeeper", "both"))
    peers = [n for n in sorted(view.addresses) if n != victim
             and ((which != "zookeeper" and n.startswith("b")) or (which != "brokers" and n.startswith("zk")))]
    plan = NetPlan(f"one_way_from_{which}", {victim: [Drop(tuple(view.addresses[p] for p in peers))]},
                   [sorted(peers), [victim]], cuts_zookeeper=which != "brokers")
    return plan


def plan_flaky_link(view: View, rng: random.Random) -> NetPlan:
    victim = rng.choice(view.brokers)
    others = [n for n in sorted(view.addresses) if n != victim]
    peers = rng.sample(others, rng.randint(1, len(others)))
    percent = rng.randint(10, 40)
    if rng.random() < 0.5:  # drawn last: a seed that planned a drop before delays existed still does
        return NetPlan(f"flaky_{percent}pct",
                       {victim: [Drop(tuple(view.addresses[p] for p in peers), percent=percent)]},
                       [sorted(peers), [victim]])
    senders = [p for p in peers if p.startswith("b")]
    delay, jitter = rng.randint(20, 200), rng.randint(50, 1000)
    return NetPlan(f"delay_{delay}ms_jitter_{jitter}ms", {}, [sorted(senders) + ["clients"], [victim]],
                   detour=Detour(victim, tuple(view.addresses[p] for p in senders) + (view.gateway,), delay, jitter))
