"""A praha broker process.

Start-up steps: connect to ZooKeeper and create the persistent paths; read or create the
cluster id; with `authorizer.class.name`, load the ACLs and follow their change notices;
start a socket server per listener (asyncio, its own thread) so the controller can reach
us; start watching config change notices (dynamic topic and broker config, e.g. a
reassignment's throttle, and client quotas, all read once after the watch is set);
register `/brokers/ids/<id>` (its czxid is our broker epoch);
start the controller module (every broker runs one; one is active); start the metrics
endpoint.

Shutdown steps (`praha broker stop`, SIGTERM): controlled shutdown — stop fetching as a
follower (so no fetch puts us back into an ISR), ask the active controller to move our
leaderships away, retrying `controlled.shutdown.max.retries` times
with backoff and following a controller move; then stop the controller module, close
the ZooKeeper session (our ephemeral znode goes, which is the "broker down" signal), stop
the socket server.
"""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Any

from praha.broker.dynamic_config import ConfigChangeListener
from praha.broker.handlers.authorization import RequestAuthorizer
from praha.broker.handlers.routes import RequestHandlers
from praha.broker.malloc import keep_freed_memory
from praha.broker.metrics import start_metrics_server
from praha.broker.network.connection_quotas import ConnectionLimits, ConnectionQuotas
from praha.broker.network.socket_server import SocketServer
from praha.broker.network.throttling import RequestQuotaThrottler
from praha.broker.offsets_log import CoordinatorLog
from praha.broker.quotas.client_quota import ClientQuotas, QuotaWindow
from praha.broker.replication.fencing import ControllerFence
from praha.broker.replication.metadata_cache import MetadataCache
from praha.broker.replication.replica_manager import ReplicaManager, cleaner_config_of, log_config_of
from praha.broker.share.manager import ShareConfig, SharePartitionManager
from praha.broker.share.partition import SharePartitionSettings
from praha.broker.share.session import ShareSessionCache
from praha.common import BrokerInfo, EndPoint, TopicPartition, now_ms
from praha.config import BrokerConfig
from praha.controller.channel_manager import Transport
from praha.controller.controller import Controller
from praha.coordinator.group.consumer.model import TopicInfo
from praha.coordinator.group.coordinator import GroupConfig, GroupCoordinator
from praha.coordinator.group.records import OFFSETS_TOPIC
from praha.coordinator.transaction.coordinator import TransactionCoordinator, TxnConfig
from praha.coordinator.transaction.markers import Leader, MarkerChannel
from praha.coordinator.transaction.records import TRANSACTION_STATE_TOPIC
from praha.errors import BrokerIdInUseError, ErrorCode, PrahaError, ZNodeDecodeError
from praha.log import meta_properties
from praha.protocol import controller_wire as wire
from praha.protocol.client import BrokerConnection
from praha.protocol.client_security import PLAINTEXT, ClientSecurity
from praha.protocol.controller_apis import ControlledShutdownRequest
from praha.protocol.controller_requests import ControllerRequest, ControllerResponseData, UpdateMetadataRequestData
from praha.protocol.framing import Session
from praha.protocol.scram import ScramCredential, ScramMechanism
from praha.registry.model import parse_listener
from praha.security.acl import CLUSTER_NAME, AclOperation, AuthorizerConfig, ResourceType
from praha.security.acl_store import AclCache
from praha.security.credentials import read_credentials
from praha.security.listener import inter_broker_security, listener_security
from praha.security.zk_client import open_zookeeper_warning, zk_auth_from_properties
from praha.statelog import StateChangeLog
from praha.topic_rules import INTERNAL_TOPICS
from praha.zk import znodes as zn
from praha.zk.admin_zk import GROUPS, read_config
from praha.zk.quota_entities import entity_from_path, quota_values
from praha.zk.quota_zk import read_all_quota_configs, read_entity_config
from praha.zk.share_state import ShareStateStore
from praha.zk.store import ZkStore

log = logging.getLogger(__name__)
#: how often share groups' timers run (locks expiring, members timing out)
SHARE_TICK_S = 0.2


def inter_broker_connection(broker: BrokerInfo, security: ClientSecurity, timeout_s: float) -> BrokerConnection:
    """A connection to `broker`'s inter-broker listener (its first endpoint if it has none)."""
    ep = broker.endpoint(security.listener) or broker.endpoints[0]
    return BrokerConnection(ep.host, ep.port, timeout=timeout_s, security=security)


class KafkaTransport(Transport):
    """The channel manager's connection to one broker, over the Kafka protocol, on the
    inter-broker listener."""

    def __init__(self, broker: BrokerInfo, timeout_s: float, security: ClientSecurity = PLAINTEXT):
        self.conn = inter_broker_connection(broker, security, timeout_s)
        self.conn.connect()

    def send(self, request: ControllerRequest) -> ControllerResponseData:
        obj, version = wire.request_to_wire(request)
        return wire.response_from_wire(self.conn.send(obj, version))

    def close(self) -> None:
        self.conn.close()


class BrokerServer:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker_id = config.broker_id
        self.fence = ControllerFence()
        self.metadata_cache = MetadataCache(config.broker_id)
        self.replica_manager = ReplicaManager(config.broker_id, config, self.metadata_cache)
        #: each listener's TLS/SASL, and how this broker reaches the others (ConfigError if unusable)
        self.listener_securities = [listener_security(config, ep) for ep in config.endpoints]
        self.inter_broker = inter_broker_security(config)
        self.replica_manager.inter_broker_security = self.inter_broker
        run_blocking = lambda fn: asyncio.get_running_loop().run_in_executor(None, fn)  # noqa: E731
        self.group_coordinator = GroupCoordinator(
            GroupConfig.from_broker_config(config),
            CoordinatorLog(self.replica_manager, OFFSETS_TOPIC, config.offsets_commit_timeout_ms),
            run_blocking=run_blocking, on_event=self._coordinator_event, topics=self.consumer_group_topics)
        #: KIP-932: share groups on the coordinator, share sessions and partitions on the leaders
        self.share_groups = self.group_coordinator.share
        self.share_sessions = ShareSessionCache()
        self.share_manager = SharePartitionManager(self.replica_manager, ShareConfig(
            SharePartitionSettings(config.group_share_partition_max_record_locks,
                                   config.group_share_record_lock_duration_ms, config.group_share_delivery_count_limit),
            config.share_auto_offset_reset.lower(), config.share_isolation_level.lower() == "read_committed"))
        #: the topics (name, partition count) consumer groups last saw, to tell them of changes
        self._consumer_topics_seen: frozenset[tuple[str, int]] = frozenset()
        self._consumer_topics_task: asyncio.Task[None] | None = None
        self._consumer_topics_dirty = False
        self.txn_coordinator = TransactionCoordinator(
            TxnConfig.from_broker_config(config),
            CoordinatorLog(self.replica_manager, TRANSACTION_STATE_TOPIC, config.request_timeout_ms),
            MarkerChannel(self._leader_of, self.metadata_cache.contains_topic, f"txn-markers-{config.broker_id}",
                          config.request_timeout_ms / 1000, security=self.inter_broker),
            allocate_producer_id=self._allocate_producer_id,
            run_blocking=run_blocking, on_event=self._coordinator_event)
        self.replica_manager.leadership_listeners.append(self._offsets_leadership)
        self.authz = RequestAuthorizer()  # AclAuthorizer once ZooKeeper is connected, if configured
        self.acl_cache: AclCache | None = None
        self.client_quotas = ClientQuotas.create(QuotaWindow(config.quota_window_num,
                                                             config.quota_window_size_seconds * 1000))
        self.handlers = RequestHandlers(self)
        self.cluster_id = ""
        self.store: ZkStore | None = None
        self.controller: Controller | None = None
        self.config_changes: ConfigChangeListener | None = None
        self.socket_server: SocketServer | None = None  # the first listener's
        self.socket_servers: list[SocketServer] = []
        self.loop = asyncio.new_event_loop()
        self._loop_thread = threading.Thread(target=self.loop.run_forever, name="network", daemon=True)
        self._stop_requested = threading.Event()
        self._stopped = threading.Event()
        self.metrics_port = -1
        self._metrics_server: Any = None  # the prometheus_client HTTP server
        self.broker_info: BrokerInfo | None = None
        log_dir = config.state_change_log_dir or str(config.log_dir_list[0])
        self.state_log = StateChangeLog(f"{log_dir}/state-change.log", config.broker_id)
        self.fence.on_accept = lambda api, epoch: self.state_log.record("ControllerRequestAccepted", -1,
                                                                        epoch, api_key=api)
        self.started_at = time.time()
        self.schema_registry: Any = None  # praha.registry.service.RegistryService, when configured

    # ---------------------------------------------------------------- start-up
    def start(self) -> None:
        cfg = self.config
        for d in cfg.log_dir_list:
            try:
                d.mkdir(parents=True, exist_ok=True)
            except OSError:
                pass  # the log manager takes it offline (or refuses to start if no dir is usable)
        self.store = ZkStore(
            cfg.zookeeper_connect,
            session_timeout_ms=cfg.zookeeper_session_timeout_ms,
            connection_timeout_ms=cfg.zookeeper_connection_timeout_ms,
            auth=zk_auth_from_properties(cfg.all_values()),
        )
        warning = open_zookeeper_warning([e.security_protocol for e in cfg.endpoints], self.store.auth)
        if warning:
            log.warning("broker %d: %s", cfg.broker_id, warning)
        self.store.start()
        self.store.ensure_persistent_paths()
        self.share_manager.store = ShareStateStore(self.store.client)
        self.cluster_id = self.store.get_or_create_cluster_id()
        dirs = [os.path.abspath(d) for d in cfg.log_dir_list]
        stored = meta_properties.read_all(dirs)
        meta_properties.check(stored, cfg.broker_id, self.cluster_id)  # before any log is opened
        self.replica_manager.start_logs(self.store)
        lm = self.replica_manager.log_manager
        assert lm is not None
        for failed_dir, e in meta_properties.write_missing(lm.live_log_dirs, meta_properties.BrokerMetadata(
                cfg.broker_id, self.cluster_id), stored):
            lm.failure_channel.report(failed_dir, e)
        if cfg.authorizer_class_name:
            self.acl_cache = AclCache(self.store)
            self.acl_cache.start()
            self.authz = RequestAuthorizer(
                AuthorizerConfig.parse(cfg.super_users, cfg.allow_everyone_if_no_acl_found), self.acl_cache)
        self._loop_thread.start()
        self.run_on_loop(self.replica_manager.start())
        self.loop.call_soon_threadsafe(self._share_tick)
        quotas = ConnectionQuotas(ConnectionLimits.from_broker_config(cfg))  # broker-wide, as Kafka's
        throttler = RequestQuotaThrottler(self.client_quotas)
        for ep, security in zip(cfg.endpoints, self.listener_securities):
            server = SocketServer(self.handlers, ep.host, ep.port, cfg.socket_request_max_bytes, throttler=throttler,
                                  security=security, scram_lookup=self._scram_credential, connection_quotas=quotas)
            self.socket_servers.append(server)
            self.run_on_loop(server.start())
        self.socket_server = self.socket_servers[0]
        listener = cfg.endpoints[0]
        self._start_config_changes()
        bound = {s.security.name: s.port for s in self.socket_servers}
        endpoints = tuple(
            EndPoint(e.host, e.port or bound[e.listener], e.listener, e.security_protocol)
            for e in cfg.advertised_endpoints
        )
        self.broker_info = BrokerInfo(cfg.broker_id, endpoints, cfg.broker_rack or None)
        epoch = self.register()
        self.controller = Controller(
            cfg, self.store, register_broker=self.register,
            transport_factory=lambda b, timeout: KafkaTransport(b, timeout, self.inter_broker),
            state_change_log=self.state_log, broker_epoch=epoch,
            last_seen_controller_epoch=lambda: self.fence.highest_controller_epoch,
        )
        self.controller.startup()
        self._metrics_server, self.metrics_port = start_metrics_server(self, cfg.metrics_host, cfg.metrics_port)
        self._start_schema_registry()
        self._write_runtime_file()
        log.info(
            "broker %d started: listening on %s:%d (%s), broker epoch %d, cluster %s, metrics on :%d",
            cfg.broker_id, listener.host, self.socket_server.port,
            ", ".join(f"{e.listener}://{e.host}:{e.port} {e.security_protocol}" for e in endpoints),
            epoch, self.cluster_id, self.metrics_port,
        )
        self.state_log.record("BrokerStarted", broker_epoch=epoch, port=self.socket_server.port)

    def _start_schema_registry(self) -> None:
        """The Schema Registry (praha/registry/), when `schema.registry.listeners` is set."""
        if not self.config.schema_registry_listeners.strip():
            return
        from praha.registry.service import RegistryService

        authz = self.authz
        may_alter = None
        if authz.enabled:
            may_alter = lambda user, host: authz.allowed(  # noqa: E731
                Session(f"User:{user}", client_host=host), AclOperation.ALTER, ResourceType.CLUSTER, CLUSTER_NAME)
        self.schema_registry = RegistryService(self.config, self.zk_store(), self.inter_broker, may_alter)
        self.schema_registry.start()

    def _start_config_changes(self) -> None:
        assert self.store is not None
        rm, loop = self.replica_manager, self.loop
        self.config_changes = ConfigChangeListener(
            self.store, self.broker_id,
            on_topic=lambda topic: void(asyncio.run_coroutine_threadsafe(rm.on_topic_config_changed(topic), loop)),
            on_broker=lambda config: void(loop.call_soon_threadsafe(rm.apply_broker_config, config)),
            on_quota=self._on_quota_change,
            on_group=self._on_group_config_change,
        )
        config = self.config_changes.start()
        for group in self.store.get_children(zn.CONFIG_GROUPS_PATH) or []:
            self._on_group_config_change(group)
        loop.call_soon_threadsafe(rm.apply_broker_config, config)
        quotas = {e: quota_values(c) for e, c in read_all_quota_configs(self.store).items()}
        loop.call_soon_threadsafe(self.client_quotas.replace_all, quotas)
        if quotas:
            log.info("client quotas: %d entities with quotas at start", sum(1 for v in quotas.values() if v))

    def _on_group_config_change(self, group: str) -> None:
        """A GROUP config written (on the listener's thread): read it, hand it to the coordinator."""
        assert self.store is not None
        try:
            values = read_config(self.store, GROUPS, group)
        except ZNodeDecodeError as e:
            log.warning("ignoring the config of group %s: %s", group, e)
            values = {}
        self.loop.call_soon_threadsafe(self.group_coordinator.set_group_config, group, values)
        self.loop.call_soon_threadsafe(self.share_groups.set_group_config, group, values)
        self.loop.call_soon_threadsafe(self.share_manager.set_group_config, group, values)

    def _on_quota_change(self, entity_path: str) -> None:
        """A change notice for a user/client entity (on the listener's thread): re-read it,
        apply it on the event loop."""
        entity = entity_from_path(entity_path)
        if entity is None:
            log.warning("ignoring a config change notice for %r: not a quota entity", entity_path)
            return
        assert self.store is not None
        try:
            values = quota_values(read_entity_config(self.store, entity))
        except ZNodeDecodeError as e:  # as for a topic config: ignored (its quotas removed), reported
            log.warning("ignoring the client quotas of %s: %s", entity.describe(), e)
            values = {}
        self.loop.call_soon_threadsafe(self.client_quotas.apply_entity_config, entity, values)
        log.info("client quotas of %s now %s", entity.describe(), values or "none")

    def _write_runtime_file(self) -> None:
        """`<first log dir>/praha-runtime.json`: where this process actually listens (for tools);
        the next dir if the first cannot take it."""
        import json
        import os

        assert self.socket_server is not None
        info = {"broker_id": self.broker_id, "pid": os.getpid(), "port": self.socket_server.port,
                "metrics_port": self.metrics_port, "listeners": {s.security.name: s.port for s in self.socket_servers}}
        for d in self.config.log_dir_list:  # the first that takes it (a failed disk is skipped)
            path = d / "praha-runtime.json"
            tmp = path.with_suffix(".tmp")
            try:
                tmp.write_text(json.dumps(info))
                tmp.replace(path)
                return
            except OSError as e:
                log.warning("cannot write %s: %s", path, e)

    def register(self) -> int:
        """Register `/brokers/ids/<id>`; returns the broker epoch. Called again after session expiry.

        If the id is taken by a registration with exactly our endpoints, it is our own
        previous incarnation (we could bind its port, so it is gone) whose session has not
        expired yet: replace it atomically, which the controller sees as a bounce."""
        assert self.store is not None
        assert self.broker_info is not None
        try:
            epoch = self.store.register_broker(self.broker_info)
        except BrokerIdInUseError:
            existing = self.store.get_broker(self.broker_id)
            if existing is None or existing.endpoints != self.broker_info.endpoints:
                raise
            log.info("replacing the stale registration of broker %d (previous incarnation)", self.broker_id)
            epoch = self.store.replace_broker_registration(self.broker_info, existing.epoch)
        self.fence.broker_epoch = epoch
        return epoch

    async def _scram_credential(self, user: str, mechanism: ScramMechanism) -> ScramCredential | None:
        """A user's SCRAM credential, read from `/config/users/<user>` when it authenticates
        (so a change is effective for the next connection)."""
        store = self.zk_store()
        creds: dict[ScramMechanism, ScramCredential] = await asyncio.get_running_loop().run_in_executor(
            None, _zk_call(lambda: read_credentials(store, user)))
        return creds.get(mechanism)

    # ---------------------------------------------------------------- loop helpers
    def zk_store(self) -> ZkStore:
        """The broker's ZooKeeper session (raises until `start` has connected it)."""
        if self.store is None:
            raise PrahaError("the broker is not connected to ZooKeeper yet", ErrorCode.BROKER_NOT_AVAILABLE)
        return self.store

    async def controller_seat(self) -> tuple[int, int] | None:
        """(controller id, epoch) from `/controller` and `/controller_epoch`, read off the loop."""
        store = self.zk_store()

        def read() -> tuple[int, int] | None:
            cid, epoch = store.get_controller_id(), store.get_controller_epoch()
            return None if cid is None or epoch is None else (cid, epoch[0])

        return await asyncio.get_running_loop().run_in_executor(None, _zk_call(read))

    async def registered_brokers(self, broker_ids: list[int]) -> dict[int, BrokerInfo]:
        store = self.zk_store()

        def read() -> dict[int, BrokerInfo]:
            found = {i: store.get_broker(i) for i in broker_ids}
            return {i: b for i, b in found.items() if b is not None}

        return await asyncio.get_running_loop().run_in_executor(None, _zk_call(read))

    def _share_tick(self) -> None:
        """Share groups' timers: acquisition locks run out, silent members leave (every SHARE_TICK_S)."""
        now = now_ms()
        for group_id, tp in self.share_manager.expire(now):
            self.loop.create_task(self.share_manager.persist(group_id, tp))
        self.share_groups.expire(now)
        self.loop.call_later(SHARE_TICK_S, self._share_tick)

    def run_on_loop(self, coro: Any, timeout: float | None = 30.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def replica_manager_call(self, fn: Callable[[ReplicaManager], Any]) -> Any:
        result = fn(self.replica_manager)
        return await result if asyncio.iscoroutine(result) else result

    def _coordinator_event(self, name: str, partition: int, **fields: Any) -> None:
        self.state_log.record(name, partition=partition, **fields)

    def _offsets_leadership(self, led: list[tuple[TopicPartition, int]], not_led: list[TopicPartition]) -> None:
        """The group coordinator follows this broker's `__consumer_offsets` leaderships, the
        transaction coordinator its `__transaction_state` ones."""
        for tp, epoch in led:
            if tp.topic == OFFSETS_TOPIC:
                self.group_coordinator.on_elected(tp.partition, epoch)
            elif tp.topic == TRANSACTION_STATE_TOPIC:
                self.txn_coordinator.on_elected(tp.partition, epoch)
        for tp in not_led:
            if tp.topic == OFFSETS_TOPIC:
                self.group_coordinator.on_resigned(tp.partition)
            elif tp.topic == TRANSACTION_STATE_TOPIC:
                self.txn_coordinator.on_resigned(tp.partition)

    async def _allocate_producer_id(self) -> int:
        return await self.handlers.producer_ids.allocate()

    def _leader_of(self, partition: tuple[str, int]) -> Leader | None:
        """Where a transaction's markers for this partition go now (the metadata cache)."""
        leader = self.metadata_cache.leader_of(TopicPartition(*partition))
        if leader is None:
            return None
        ep = leader.endpoint(self.inter_broker.listener) or leader.endpoints[0]  # the inter-broker listener
        return leader.id, ep.host, ep.port

    def on_metadata_update(self, data: UpdateMetadataRequestData, deleted: Any) -> None:
        """Deleted topics stop being served; fetchers follow moved leader endpoints; KIP-848
        consumer groups learn of topics created, deleted or grown."""
        self.replica_manager.on_metadata_update(self.metadata_cache.live_brokers, deleted)
        if self.group_coordinator.consumer.groups:
            self._consumer_topics_dirty = True
            if self._consumer_topics_task is None or self._consumer_topics_task.done():
                self._consumer_topics_task = asyncio.get_running_loop().create_task(self._tell_consumer_groups())

    def consumer_group_topics(self) -> dict[str, TopicInfo]:
        """The topics a consumer group may subscribe to: every non-internal topic whose id is known."""
        cache = self.metadata_cache
        return {name: TopicInfo(name, cache.topic_ids[name], len(parts)) for name, parts in cache.partitions.items()
                if name not in INTERNAL_TOPICS and name in cache.topic_ids and cache.topic_ids[name].int}

    async def load_topic_ids(self) -> None:
        await self.handlers.metadata.load_topic_ids(self.metadata_cache.topics())

    async def _tell_consumer_groups(self) -> None:
        """Until no update came in meanwhile: topic ids read, groups told if the topics changed."""
        while self._consumer_topics_dirty:
            self._consumer_topics_dirty = False
            try:
                await self.load_topic_ids()
                seen = frozenset((t.name, t.partitions) for t in self.consumer_group_topics().values())
                if seen != self._consumer_topics_seen:
                    self._consumer_topics_seen = seen
                    n = await self.group_coordinator.consumer.on_topics_changed()
                    if n:
                        log.info("consumer groups: topics changed, %d groups get a new epoch", n)
            except Exception as e:  # noqa: BLE001 - the next metadata update tries again
                log.warning("consumer groups not told of topic changes: %r", e)

    def broker_figures(self) -> list[tuple[str, float, str]]:
        ss = self.socket_server
        servers = self.socket_servers
        return [
            ("authorization_denied", float(self.authz.denied), "resource checks refused by the ACL authoriser"),
            ("failed_authentications", float(sum(s.failed_authentications for s in servers)),
             "connections closed because they did not authenticate (TLS principal, SASL)"),
            ("broker_epoch", float(self.fence.broker_epoch), "this broker's epoch (czxid of its registration)"),
            ("highest_controller_epoch_seen", float(self.fence.highest_controller_epoch),
             "highest controller epoch accepted"),
            ("stale_controller_requests", float(sum(self.fence.refused.values())),
             "controller requests refused as stale"),
            ("connections", float(sum(s.connections for s in servers)), "open client connections"),
            ("connections_accepted", float(sum(s.accepted for s in servers)),
             "connections accepted since start (Kafka's connection-creation-total)"),
            ("requests", float(sum(s.requests for s in servers)), "requests handled"),
            ("bad_requests", float(sum(s.bad_requests for s in servers)), "malformed or unsupported requests"),
            ("handler_failures", float(sum(s.handler_failures for s in servers)),
             "requests whose handler failed, answered UNKNOWN_SERVER_ERROR"),
            ("connections_refused", float(sum(ss.connection_quotas.refused.values()) if ss else 0),
             "connections closed at once: max.connections or max.connections.per.ip reached"),
            ("connections_throttled", float(ss.connection_quotas.throttled if ss else 0),
             "connections served late under max.connection.creation.rate"),
            ("connections_closed_idle", float(sum(s.closed_idle for s in servers)),
             "connections closed after connections.max.idle.ms"),
            ("connections_closed_partial_request", float(sum(s.closed_partial for s in servers)),
             "connections closed with a request stalled mid-frame (praha.partial.request.timeout.ms)"),
            ("client_quota_entities", float(len({e for m in self.client_quotas.managers() for e in m.overrides})),
             "users and client ids with a client quota in force"),
            ("client_quota_mutes", float(sum(s.mutes for s in servers)),
             "connections muted after a response for a client over its quota"),
            ("partitions", float(len(self.replica_manager.partitions)), "replicas hosted"),
            ("leader_partitions", float(self.replica_manager.leader_count()), "partitions led"),
            *self.replica_manager.figures(),
            *self.group_coordinator.figures(),
            *self.txn_coordinator.figures(),
            ("metadata_partitions", float(self.metadata_cache.partition_count()), "partitions in the metadata cache"),
        ]

    # ---------------------------------------------------------------- shutdown
    def request_stop(self) -> None:
        self._stop_requested.set()

    def wait(self) -> None:
        while not self._stop_requested.wait(0.5):
            pass

    def controlled_shutdown(self) -> bool:
        """Ask the controller to move our leaderships away; True when nothing is left."""
        cfg = self.config
        assert self.store is not None
        retries = cfg.controlled_shutdown_max_retries
        backoff = cfg.controlled_shutdown_retry_backoff_ms / 1000.0
        try:
            stopped = self.run_on_loop(self.replica_manager.stop_following(), timeout=10)
            log.info("controlled shutdown: stopped fetching %d followed partitions", stopped)
        except Exception as e:  # noqa: BLE001 - the shutdown goes on regardless
            log.warning("could not stop the follower fetchers: %r", e)
        for attempt in range(1, retries + 1):
            try:
                controller_id = self.store.get_controller_id()
                target = self.store.get_broker(controller_id) if controller_id is not None else None
                if target is None:
                    raise PrahaError("no active controller")
                conn = inter_broker_connection(target, self.inter_broker, cfg.controller_socket_timeout_ms / 1000.0)
                try:
                    conn.connect()
                    resp = conn.send(
                        ControlledShutdownRequest(broker_id=self.broker_id, broker_epoch=self.fence.broker_epoch),
                        wire.CONTROLLED_SHUTDOWN_VERSION,
                    )
                finally:
                    conn.close()
                remaining = len(resp.remaining_partitions or [])
                if resp.error_code == ErrorCode.NONE and remaining == 0:
                    log.info("controlled shutdown succeeded (attempt %d)", attempt)
                    return True
                log.info(
                    "controlled shutdown attempt %d: error %s, %d partitions still led",
                    attempt,
                    (ErrorCode(resp.error_code).name if resp.error_code in ErrorCode._value2member_map_
                     else resp.error_code),
                    remaining,
                )
            except Exception as e:  # noqa: BLE001 - retry on anything, bounded
                log.warning("controlled shutdown attempt %d failed: %s", attempt, e)
            if attempt < retries:
                time.sleep(backoff)
        log.warning("controlled shutdown did not complete after %d attempts; shutting down anyway", retries)
        return False

    def shutdown(self) -> None:
        if self._stopped.is_set():
            return
        self._stopped.set()
        cfg = self.config
        if cfg.controlled_shutdown_enable and self.store is not None and self.controller is not None:
            self.controlled_shutdown()
        if self.schema_registry is not None:
            self.schema_registry.stop()
        if self.controller is not None:
            self.controller.shutdown()
        if self.config_changes is not None:
            self.config_changes.stop()
        if self.acl_cache is not None:
            self.acl_cache.stop()
        if self.store is not None:
            self.store.stop()
        for server in self.socket_servers:
            if self._loop_thread.is_alive():
                try:
                    self.run_on_loop(server.stop(), timeout=5)
                except Exception:  # noqa: BLE001
                    pass
        if self._loop_thread.is_alive():
            try:
                self.loop.call_soon_threadsafe(self.group_coordinator.shutdown)
                self.loop.call_soon_threadsafe(self.txn_coordinator.shutdown)
                self.run_on_loop(self.replica_manager.shutdown(), timeout=15)
            except Exception:  # noqa: BLE001
                log.exception("replica manager shutdown failed")
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._loop_thread.join(5)
        self.replica_manager.close_logs()
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
        self.state_log.record("BrokerStopped")
        self.state_log.close()
        log.info("broker %d stopped", self.broker_id)


def check_startup_config(config: BrokerConfig) -> None:
    """The settings the broker derives at start-up (log defaults, cleaner, connection
    limits), checked before anything starts: ConfigError naming the key, as for the rest."""
    log_config_of(config)
    cleaner_config_of(config)
    ConnectionLimits.from_broker_config(config)
    for ep in config.endpoints:
        listener_security(config, ep)
    inter_broker_security(config)
    parse_listener(config.schema_registry_listeners)


def run_broker(config: BrokerConfig) -> int:
    """Run a broker in the foreground until SIGTERM/SIGINT; the `praha broker start` entry point."""
    keep_freed_memory()
    server = BrokerServer(config)
    signal.signal(signal.SIGTERM, lambda *_: server.request_stop())
    signal.signal(signal.SIGINT, lambda *_: server.request_stop())
    try:
        server.start()
    except BrokerIdInUseError as e:
        log.error("%s", e)
        server.shutdown()
        return 2
    except PrahaError as e:
        log.error("broker %d failed to start: %s", config.broker_id, e)
        server.shutdown()
        return 1
    server.wait()
    log.info("broker %d stopping", config.broker_id)
    server.shutdown()
    return 0


def void(_result: object) -> None:
    """Drop a scheduling call's handle: the callback's outcome is logged where it runs."""


def _zk_call(read: Callable[[], Any]) -> Callable[[], Any]:
    """`read` with any failure turned into a PrahaError (kazoo raises its own types)."""

    def call() -> Any:
        try:
            return read()
        except PrahaError:
            raise
        except Exception as e:  # noqa: BLE001 - connection loss, timeouts, decode errors
            raise PrahaError(f"ZooKeeper read failed: {e!r}") from e

    return call
