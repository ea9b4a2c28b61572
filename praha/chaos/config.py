"""What one chaos campaign runs: cluster size, fault count, seed, workload and bounds.

Every number that decides what happens is here, so a campaign is replayed from its
seed plus this configuration (both are printed and stored in the report).
"""
from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

#: every fault kind the injector knows; `zk_member_kill` needs a ZooKeeper ensemble
ALL_KINDS = ("kill", "kill_controller", "pause", "zk_expire", "controlled_restart", "stutter", "stale_controller",
             "forged_controller", "long_pause", "member_kill", "coordinator_kill", "zk_member_kill", "full_disk",
             "forged_zk_write",
             # network faults: only with --netns (every node on a host of its own)
             "partition", "one_way", "flaky_link")
#: kinds that need the nodes in network namespaces
NETWORK_KINDS = frozenset({"partition", "one_way", "flaky_link"})

WORKLOADS = ("queue", "txn", "share")

#: relative frequency of each kind in a schedule
KIND_WEIGHTS = {
    "kill": 3, "kill_controller": 3, "pause": 2, "zk_expire": 2, "controlled_restart": 2,
    "stutter": 1, "stale_controller": 1, "forged_controller": 1, "member_kill": 2, "coordinator_kill": 2,
    "zk_member_kill": 2, "full_disk": 1, "forged_zk_write": 1, "long_pause": 2,
    "partition": 4, "one_way": 2, "flaky_link": 2,
}


def new_seed() -> int:
    return random.SystemRandom().randrange(1, 2**31)


@dataclass
class CampaignConfig:
    brokers: int = 5
    faults: int = 20
    seed: int = field(default_factory=new_seed)
    zk_ensemble: int = 1  # 1: one embedded server; 3: a 3-node ensemble on loopback
    #: brokers log in to ZooKeeper (digest) with zookeeper.set.acl=true, the tree secured as docs/security.md says
    secure_zookeeper: bool = False
    #: clients on SASL_SSL with SCRAM, each workload principal with its own ACLs (praha/chaos/access.py),
    #: brokers among themselves on mutual TLS, ZooKeeper secured as with secure_zookeeper
    secure: bool = False
    netns: bool = False  # every ZooKeeper server and broker in a network namespace of its own
    workdir: Path = Path(".praha/chaos")
    kinds: tuple[str, ...] = ALL_KINDS
    # workload: "queue" (idempotent producers, assign consumers, the consumer group), "txn"
    # (the queue workload plus transactional clients judged by the history checker) or "share"
    # (the queue workload plus a share group: praha/chaos/share_workload.py)
    workload: str = "queue"
    topics: int = 2
    partitions: int = 3
    replication_factor: int = 3
    min_insync_replicas: int = 2
    producers: int = 2
    records_per_second: int = 60  # per producer
    consumers: int = 1
    group_members: int = 3  # the consumer group's member processes (0: no group, no member kills)
    admin_interval_s: float = 3.0
    # cluster timing: a short session timeout makes zombies and expiries quick to provoke
    session_timeout_ms: int = 4000
    replica_lag_time_max_ms: int = 4000
    # fault pacing
    min_gap_s: float = 0.5
    max_gap_s: float = 2.5
    heal_timeout_s: float = 120.0
    # bounds
    rss_bound_mb: float = 400.0
    rss_growth_bound_mb: float = 200.0
    keep_logs: bool = True
    extra_broker_config: dict[str, str] = field(default_factory=dict)

    def missing(self) -> dict[str, str]:
        """Kind → what this campaign lacks for it (the option that would enable it)."""
        lacks = {
            "zk_member_kill": "--zk-ensemble 3" if self.zk_ensemble < 3 else "",
            "member_kill": "--group-members 1 or more" if self.group_members < 1 else "",
            "coordinator_kill": "--group-members 1 or more" if self.group_members < 1 else "",
            "forged_zk_write": "--secure-zookeeper (or --secure)" if not self.zk_acls else "",
            # its point is the transactional producer paused with the broker
            "long_pause": "--workload txn" if self.workload != "txn" else "",
            **{k: "--netns" for k in NETWORK_KINDS if not self.netns},
        }
        return {k: why for k, why in lacks.items() if why}

    @property
    def zk_acls(self) -> bool:
        """Do the brokers and the harness log in to ZooKeeper, the tree protected by ACLs?"""
        return self.secure or self.secure_zookeeper

    def effective_kinds(self) -> tuple[str, ...]:
        """The kinds that make sense for this cluster (no ensemble → no member kills)."""
        missing = self.missing()
        kinds = tuple(k for k in self.kinds if k in ALL_KINDS and k not in missing)
        return kinds or ("kill",)

    def validate(self) -> None:
        if self.brokers < 3:
            raise ValueError("a chaos campaign needs at least 3 brokers (RF 3 topics)")
        if self.replication_factor > self.brokers:
            raise ValueError("replication factor exceeds the number of brokers")
        if self.faults < 0:
            raise ValueError("--faults must be >= 0")
        if self.group_members < 0:
            raise ValueError("group_members must be >= 0")
        if self.workload not in WORKLOADS:
            raise ValueError(f"unknown workload {self.workload!r}; known: {', '.join(WORKLOADS)}")
        if self.zk_ensemble not in (1, 3):
            raise ValueError("--zk-ensemble must be 1 or 3")
        if self.secure and self.secure_zookeeper:
            raise ValueError("--secure already secures ZooKeeper; drop --secure-zookeeper")
        unknown = [k for k in self.kinds if k not in ALL_KINDS]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; known: {', '.join(ALL_KINDS)}")

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["workdir"] = str(self.workdir)
        d["kinds"] = list(self.effective_kinds())
        return d
