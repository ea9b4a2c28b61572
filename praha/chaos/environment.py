"""The cluster a campaign runs against: ZooKeeper, one TCP proxy per broker and server, brokers.

With the `full_disk` fault kind (and where tmpfs mounts work), every broker gets a second
log dir on a small tmpfs of its own (`disks`), which the fault fills up.

Each broker reaches ZooKeeper only through proxies of its own (one per ZooKeeper
server), so cutting them expires exactly that broker's session. With `netns` every
ZooKeeper server and broker runs in a network namespace of its own (praha/cluster/netns.py)
and reaches ZooKeeper directly; its session is expired by dropping its packets instead. The harness itself talks
to ZooKeeper directly. Everything started here is stopped by PID in `close()`, paused
brokers are resumed first, and `close()` is safe to call twice.
"""
from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from pathlib import Path

from praha.admin.zk_security_migration import AclMode, migrate
from praha.chaos.access import ClientAccess
from praha.chaos.config import CampaignConfig
from praha.chaos.principals import GRANTS, Role
from praha.chaos.share_config import BROKER_SETTINGS as SHARE_BROKER_SETTINGS
from praha.cluster import netns
from praha.cluster.local import BrokerProcess, LocalCluster
from praha.errors import PrahaError
from praha.protocol.client_security import ClientSecurity
from praha.testing import disks
from praha.testing.proxy import TcpProxy
from praha.zk.auth import ZkAuth
from praha.zk.server import EmbeddedZooKeeper, ZooKeeperEnsemble
from praha.zk.store import ZkStore

log = logging.getLogger(__name__)

#: size of each broker's small log dir (the full_disk fault fills it: this much RAM, briefly)
DISK_MB = 32
#: how often the transaction coordinators look for transactions past their timeout
TXN_ABORT_CHECK_MS = 2000


def broker_overrides(cfg: CampaignConfig) -> dict[str, str]:
    """Broker settings of a campaign: quick failure detection, Kafka semantics otherwise."""
    return {
        "zookeeper.session.timeout.ms": str(cfg.session_timeout_ms),
        "replica.lag.time.max.ms": str(cfg.replica_lag_time_max_ms),
        "isr.change.notification.interval.ms": "300",
        "replica.fetch.backoff.ms": "200",
        "controlled.shutdown.retry.backoff.ms": "300",
        "controlled.shutdown.max.retries": "5",
        "min.insync.replicas": str(cfg.min_insync_replicas),
        "unclean.leader.election.enable": "false",
        "leader.imbalance.check.interval.seconds": "15",
        # the consumer group: members with a short session timeout, no initial join delay, and
        # 10 __consumer_offsets partitions (Kafka's 50 would only slow every failover down)
        "group.initial.rebalance.delay.ms": "0",
        "group.min.session.timeout.ms": "1000",
        "offsets.topic.num.partitions": "10",
        # the transactional workload: as few coordinator partitions, and timed-out transactions
        # aborted within 2 s of their timeout (Kafka checks every 10 s)
        "transaction.state.log.num.partitions": "10",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(TXN_ABORT_CHECK_MS),
        # no Schema Registry: no campaign client uses it, and a broker (re)started by a fault
        # would otherwise import it, start its reader and be waited for until it listens
        "schema.registry.listeners": "",
        **(SHARE_BROKER_SETTINGS if cfg.workload == "share" else {}),
        **cfg.extra_broker_config,
    }


class ChaosEnvironment:
    def __init__(self, cfg: CampaignConfig, root: Path):
        self.cfg = cfg
        self.root = root
        self.zk: EmbeddedZooKeeper | None = None
        self.ensemble: ZooKeeperEnsemble | None = None
        self.proxies: dict[int, list[TcpProxy]] = {}
        self.cluster = LocalCluster(root / "cluster")
        #: the brokers' and the harness's ZooKeeper identity (secure_zookeeper), else the default
        self.zk_auth = ZkAuth(f"praha:{secrets.token_urlsafe(12)}", True) if cfg.secure_zookeeper else None
        self._store: ZkStore | None = None
        self.paused: set[int] = set()
        self.zk_members_down: set[int] = set()
        #: broker → its small second log dir (only with the full_disk fault kind)
        self.disks: dict[int, disks.TinyDisk] = {}
        self._closed = False
        self._cluster_stopped = False
        #: with cfg.netns: the namespaces, addresses and bridge of every node
        self.layout: netns.NetnsLayout | None = None
        #: with cfg.secure: each principal's password, and the cluster's CA
        self.passwords: dict[Role, str] = {}
        self.ca = ""
        #: with cfg.secure: what the cluster must refuse (`probe_security`) → whether it did
        self.refusals: dict[str, bool] = {}

    @property
    def store(self) -> ZkStore:
        """The harness's own ZooKeeper session (open from `start` to `close`)."""
        if self._store is None:
            raise PrahaError("the chaos environment is not started")
        return self._store

    # ------------------------------------------------------------------ start
    @property
    def zk_connect(self) -> str:
        if self.ensemble is not None:
            return self.ensemble.connect_string
        assert self.zk is not None
        return self.zk.connect_string

    def zk_addresses(self) -> list[tuple[str, int]]:
        if self.ensemble is not None:
            return [(s.host, s.port) for s in self.ensemble.servers]
        assert self.zk is not None, "the environment is not started"
        return [(self.zk.host, self.zk.port)]

    def start(self) -> None:
        cfg = self.cfg
        self.root.mkdir(parents=True, exist_ok=True)
        zk_count = max(1, cfg.zk_ensemble)
        lay = None
        if cfg.netns:
            lay = self.layout = netns.create([f"zk{i}" for i in range(1, zk_count + 1)]
                                             + [f"b{b}" for b in range(1, cfg.brokers + 1)], self.root / "netns.json")
        if cfg.zk_ensemble >= 3:
            placement = ({i: (lay.node(f"zk{i}").netns, lay.node(f"zk{i}").address) for i in range(1, zk_count + 1)}
                         if lay else None)
            self.ensemble = ZooKeeperEnsemble(cfg.zk_ensemble, self.root / "zookeeper", tick_time_ms=500,
                                              placement=placement)
            self.ensemble.start(timeout=90)
        else:
            self.zk = EmbeddedZooKeeper(self.root / "zookeeper", port=2181 if lay else 0,
                                        host=lay.node("zk1").address if lay else "127.0.0.1", tick_time_ms=500,
                                        min_session_timeout_ms=1000, die_with_parent=True)
            self.zk.netns = lay.node("zk1").netns if lay else ""
            self.zk.start(timeout=60)
        per_broker = {}
        for bid in range(1, cfg.brokers + 1):
            if lay is not None:  # on hosts of their own: straight to ZooKeeper
                per_broker[bid] = {"zookeeper.connect": self.zk_connect}
                continue
            self.proxies[bid] = [TcpProxy(addr) for addr in self.zk_addresses()]
            per_broker[bid] = {"zookeeper.connect": ",".join(p.connect_string for p in self.proxies[bid])}
        if "full_disk" in cfg.effective_kinds() and disks.available():
            for bid in per_broker:
                disk = self.disks[bid] = disks.TinyDisk(self.root / "disks" / f"broker-{bid}", DISK_MB).mount()
                per_broker[bid]["log.dirs"] = f"{self.cluster.root / f'broker-{bid}' / 'data'},{disk.path}"
        overrides = broker_overrides(cfg)
        if self.zk_auth is not None:
            overrides |= {"zookeeper.set.acl": "true", "praha.zookeeper.digest": self.zk_auth.digest}
        state = self.cluster.up(cfg.brokers, zookeeper=self.zk_connect, overrides=overrides, per_broker=per_broker,
                                timeout=120, netns_layout=lay, secure=cfg.secure)
        if cfg.secure:  # the cluster's own ZooKeeper identity (a digest one: this ZooKeeper is external to it)
            from praha.cluster.secure import SecureSetup

            setup = SecureSetup.load(Path(state.security_dir))
            self.zk_auth, self.ca = setup.zk_auth(), str(setup.ca)
            self.passwords[Role.ADMIN] = setup.admin_password
        self._store = ZkStore(self.zk_connect, session_timeout_ms=10000, connection_timeout_ms=10000,
                              auth=self.zk_auth).start()
        if cfg.zk_acls:  # what the brokers created before the first ACL'd write, and the root
            migrate(self._store, AclMode.SECURE)
        if cfg.secure:
            self._add_principals()

    def _add_principals(self) -> None:
        """Each workload principal with its ACLs (GRANTS), then a bounded wait until every broker
        lets each of them in (the brokers learn users and ACLs from ZooKeeper's change notices)."""
        from praha.admin.client_status import fetch_metadata
        from praha.cluster.secure import add_client

        for role, grants in GRANTS.items():
            self.passwords[role] = add_client(self.store, role.value, grants)
        topics = sorted(self.store.get_all_topics())

        def everyone_in() -> bool:
            for role in self.passwords:
                for b in self.brokers().values():
                    fetch_metadata(b.address, topics=topics, timeout=3.0, security=self.access(role).security())
            return True

        if not wait_until(everyone_in, 60, interval=0.5):
            raise PrahaError("the workload principals could not log in to every broker within 60s")
        self.refusals = self.probe_security()

    def probe_security(self) -> dict[str, bool]:
        """Once, before the workload: a plain-TCP client, a wrong password, and the reader
        describing a topic outside its grants must each be refused by every broker (so that
        every client that works through the campaign is known to have logged in)."""
        from praha.admin.client_status import fetch_metadata
        from praha.errors import ErrorCode
        from praha.protocol.client_security import PLAINTEXT

        def refused(address: str, security: ClientSecurity, topic: str = "") -> bool:
            try:
                md = fetch_metadata(address, topics=[topic] if topic else [], timeout=5.0, security=security)
            except Exception:  # noqa: BLE001 - a closed connection or a failed login: refused
                return not topic
            return bool(topic) and all(t.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED for t in md.topics)

        reader = self.access(Role.READER)
        wrong = ClientAccess(reader.bootstrap, reader.username, reader.password + "x", reader.ca)
        addresses = [b.address for b in self.brokers().values()]
        return {
            "plaintext_client": all(refused(a, PLAINTEXT) for a in addresses),
            "wrong_password": all(refused(a, wrong.security()) for a in addresses),
            "reader_outside_its_grants": all(refused(a, reader.security(), "__consumer_offsets") for a in addresses),
        }

    # ------------------------------------------------------------------ queries
    def brokers(self) -> dict[int, BrokerProcess]:
        return self.cluster.load().brokers

    def running(self, bid: int) -> bool:
        return self.cluster.broker_running(self.brokers()[bid])

    def controller_id(self) -> int:
        try:
            cid = self.store.get_controller_id()
        except Exception:  # noqa: BLE001 - corrupt or unreachable: no controller known
            return -1
        return -1 if cid is None else cid

    def controller_epoch(self) -> int:
        try:
            e = self.store.get_controller_epoch()
        except Exception:  # noqa: BLE001
            return -1
        return -1 if e is None else e[0]

    def live_broker_ids(self) -> set[int]:
        brokers, _ = self.store.get_live_brokers()
        return set(brokers)

    def bootstrap(self) -> str:
        return ",".join(b.address for b in self.brokers().values())

    def access(self, role: Role) -> ClientAccess:
        """How a client of `role` connects (plain TCP unless the campaign is secure)."""
        if not self.cfg.secure:
            return ClientAccess(self.bootstrap())
        return ClientAccess(self.bootstrap(), role.value, self.passwords[role], self.ca)

    def admin_security(self) -> ClientSecurity:
        """The harness's own connections to the brokers (the admin's when secure)."""
        return self.access(Role.ADMIN).security()

    def zk_nodes(self) -> list[netns.NetnsNode]:
        """The ZooKeeper servers' hosts (with `netns`)."""
        lay = self.network()
        return [n for name, n in lay.nodes.items() if name.startswith("zk")]

    def broker_node(self, bid: int) -> netns.NetnsNode:
        return self.network().node(f"b{bid}")

    def network(self) -> netns.NetnsLayout:
        if self.layout is None:
            raise PrahaError("this campaign runs without --netns: no network faults")
        return self.layout

    def log_dirs(self) -> dict[int, list[Path]]:
        """broker → every log dir it has (the tmpfs ones included while mounted)."""
        return {bid: b.log_dirs for bid, b in self.brokers().items()}

    # ------------------------------------------------------------------ stop
    def stop_cluster(self) -> None:
        """Resume, restore and stop the brokers (by PID); disks and ZooKeeper stay, so the
        replicas can be compared on disk before `close` unmounts anything. Safe twice."""
        if self._cluster_stopped:
            return
        self._cluster_stopped = True
        for bid in list(self.paused):
            try:
                self.cluster.resume_broker(bid)
            except Exception:  # noqa: BLE001
                pass
        for proxies in self.proxies.values():
            for p in proxies:
                p.restore()
        if self.layout is not None:
            for node in self.layout.nodes.values():
                netns.heal(node)
        if self._store is not None:
            try:
                self._store.stop()
            except Exception:  # noqa: BLE001
                pass
        if self.cluster.exists():
            try:
                self.cluster.down(timeout=20)
            except Exception:  # noqa: BLE001
                log.exception("stopping the chaos cluster failed")

    def close(self) -> None:
        """Stop everything this environment started (by PID) and unmount its disks; safe twice."""
        if self._closed:
            return
        self._closed = True
        self.stop_cluster()
        for proxies in self.proxies.values():
            for p in proxies:
                p.stop()
        for disk in self.disks.values():
            disk.unmount()
        if self.ensemble is not None:
            self.ensemble.stop()
        if self.zk is not None:
            self.zk.stop()
        if self.layout is not None:
            netns.teardown(self.layout)


def wait_until(predicate: Callable[[], object], timeout: float, interval: float = 0.2) -> bool:
    """Poll `predicate` (exceptions count as False) until true or `timeout`; bounded."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if predicate():
                return True
        except Exception:  # noqa: BLE001 - the cluster may be mid-fault
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
