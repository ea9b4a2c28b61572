"""The controller's log-dir event flow (Kafka's processLogDirEventNotification and the
KAFKA_STORAGE_ERROR half of its LeaderAndIsr response handling), on the in-memory store."""
from praha.common import TopicPartition
from praha.controller import events as ev
from praha.controller.flows import ControllerFlows, split_storage_errors
from praha.controller.states import PartitionAndReplica, PartitionState, ReplicaState
from praha.errors import ErrorCode
from praha.protocol.controller_requests import ControllerResponseData

from .fakes import broker, online_topics, rig, services

T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)
TOPICS = {"t": {0: (1, 2, 3), 1: (2, 3, 1), 2: (1, 3, 2)}}


def _flows():
    r = rig(topics=TOPICS)
    online_topics(r, TOPICS)
    flows = ControllerFlows(services(r))
    return r, flows, flows.handlers()


def _leader_and_isr_partitions(r, broker_id):
    return {s.tp for req in r.sender.leader_and_isr().get(broker_id, []) for s in req.partitions}


def _storage_errors_from_broker_1(handlers, offline, online=()):
    errors = {tp: int(ErrorCode.KAFKA_STORAGE_ERROR) for tp in offline}
    errors.update({tp: int(ErrorCode.NONE) for tp in online})
    handlers[ev.LeaderAndIsrResponseReceived](ev.LeaderAndIsrResponseReceived(1, ControllerResponseData(0, errors)))


def test_a_notification_asks_the_broker_about_every_replica_and_is_deleted():
    r, _flows_, handlers = _flows()
    r.store.log_dir_events["log_dir_event_0000000000"] = 1
    handlers[ev.LogDirEventNotification](ev.LogDirEventNotification())
    assert _leader_and_isr_partitions(r, 1) == {T0, T1, T2}
    assert not _leader_and_isr_partitions(r, 2)  # only the broker whose dir failed is asked
    assert r.store.log_dir_events == {}
    assert r.ctx.replicas_on_offline_dirs == {}  # nothing is offline until the broker says so


def test_a_notification_of_a_dead_broker_is_deleted_without_requests():
    r, _flows_, handlers = _flows()
    r.store.log_dir_events["log_dir_event_0000000003"] = 9
    handlers[ev.LogDirEventNotification](ev.LogDirEventNotification())
    assert r.sender.leader_and_isr() == {}
    assert r.store.log_dir_events == {}


def test_storage_errors_take_the_replicas_offline_and_move_their_leadership_within_the_isr():
    r, _flows_, handlers = _flows()
    _storage_errors_from_broker_1(handlers, offline={T0, T2}, online={T1})
    assert r.ctx.replicas_on_offline_dirs == {1: {T0, T2}}
    for tp in (T0, T2):
        li = r.store.states[tp].leader_and_isr
        assert li.leader in (2, 3), (tp, li)
        assert 1 not in li.isr, (tp, li)
        assert r.ctx.partition_states[tp] is PartitionState.ONLINE
        assert r.ctx.replica_states[PartitionAndReplica(tp, 1)] is ReplicaState.OFFLINE
    # the replica in a healthy dir is untouched
    assert r.store.states[T1].leader_and_isr.isr == (2, 3, 1)
    assert r.ctx.replica_states[PartitionAndReplica(T1, 1)] is ReplicaState.ONLINE
    # every broker hears of the offline replicas (Metadata's offline_replicas)
    states = {s.tp: s for reqs in r.sender.update_metadata().values() for req in reqs for s in req.partitions}
    assert states[T0].offline_replicas == (1,)
    assert states[T2].offline_replicas == (1,)
    assert 1 not in states[T0].isr


def test_an_answer_repeating_known_offline_replicas_changes_nothing():
    r, _flows_, handlers = _flows()
    _storage_errors_from_broker_1(handlers, offline={T0})
    before = dict(r.store.states)
    r.sender.sent.clear()
    _storage_errors_from_broker_1(handlers, offline={T0})
    assert r.store.states == before
    assert r.sender.sent == []


def test_a_replica_in_a_failed_dir_is_never_elected():
    r, flows, _handlers = _flows()
    # still in T1's ISR (2, 3, 1) — its removal raced — but known to be in a failed dir
    r.ctx.replicas_on_offline_dirs[1] = {T1}
    r.ctx.remove_live_brokers({2, 3})
    with flows.batch():
        flows.on_broker_failure({2, 3})
    assert r.store.states[T1].leader_and_isr.leader != 1
    assert r.ctx.partition_states[T1] is PartitionState.OFFLINE
    assert r.store.states[T0].leader_and_isr.leader == 1  # its other replicas may lead


def test_a_restarted_broker_starts_with_a_clean_slate():
    r, flows, handlers = _flows()
    _storage_errors_from_broker_1(handlers, offline={T0})
    restarted = broker(1)
    r.store.brokers = {b: broker(b) for b in (2, 3)}
    r.store.brokers[1] = type(restarted)(1, restarted.endpoints, epoch=restarted.epoch + 50)
    handlers[ev.BrokerChange](ev.BrokerChange())
    assert r.ctx.replicas_on_offline_dirs == {}
    assert r.ctx.replica_states[PartitionAndReplica(T0, 1)] is ReplicaState.ONLINE


def test_failover_deletes_old_notifications():
    r, flows, _handlers = _flows()
    r.store.log_dir_events = {"log_dir_event_0000000000": 1, "log_dir_event_0000000001": 2}
    flows.delete_stale_log_dir_notifications()
    assert r.store.log_dir_events == {}


def test_only_storage_errors_and_successes_say_anything_about_the_disk():
    offline, online = split_storage_errors({
        T0: int(ErrorCode.KAFKA_STORAGE_ERROR), T1: int(ErrorCode.NONE), T2: int(ErrorCode.STALE_CONTROLLER_EPOCH)})
    assert (offline, online) == ({T0}, {T1})
