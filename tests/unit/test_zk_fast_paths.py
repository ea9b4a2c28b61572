"""The failover read path of ZkStore: fast decoders equal the reference codecs in `znodes`
(same value or the same error) on every input; `watch_data_many` arms watches that fire
like `watch_data`'s; bulk decoding while reading returns what the reference would."""
from __future__ import annotations

import json
import queue

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.protocol.states import ZnodeStat

from praha.common import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicAssignment, TopicPartition
from praha.errors import ZNodeDecodeError
from praha.zk import store as store_mod
from praha.zk import znodes as zn
from praha.zk.watches import WatchEventType

STAT = ZnodeStat(0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0)
PATH = "/brokers/topics/t/partitions/0/state"
TOPIC_PATH = "/brokers/topics/t"


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except ZNodeDecodeError as e:
        return ("error", e.path, e.reason)


def same_as_reference_state(data: bytes) -> None:
    fast = outcome(store_mod._decode_partition_state, PATH, data, STAT)
    ref = outcome(zn.decode_partition_state, data, STAT.version, PATH)
    assert fast == ref


def same_as_reference_assignment(data: bytes) -> None:
    fast = outcome(store_mod._decode_topic_assignment, TOPIC_PATH, data, STAT)
    ref = outcome(zn.decode_topic_assignment, data, TOPIC_PATH)
    assert fast == ref


STATE_CASES = [
    b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}',
    b'{"controller_epoch":1,"leader":1,"leader_epoch":0,"isr":[1]}',  # no version: 1
    b'{"controller_epoch":1,"leader":-1,"version":1,"leader_epoch":4,"isr":[],"leader_recovery_state":0}',
    b'{"controller_epoch":1,"leader":1,"version":2,"leader_epoch":0,"isr":[1]}',
    b'{"controller_epoch":1,"leader":1,"version":true,"leader_epoch":0,"isr":[1]}',
    b'{"controller_epoch":1,"leader":1,"version":null,"leader_epoch":0,"isr":[1]}',
    b'{"controller_epoch":1,"leader":true,"version":1,"leader_epoch":0,"isr":[1]}',
    b'{"controller_epoch":1,"leader":1.0,"version":1,"leader_epoch":0,"isr":[1]}',
    b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,false]}',
    b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":"1,2"}',
    b'{"controller_epoch":1,"leader":1,"version":1,"isr":[1]}',
    b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1],"x":NaN}',
    b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]',
    b'\xef\xbb\xbf{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1]}',
    b'\xff\xfe', b"", b"[]", b"null", b"1", b'"x"',
]


@pytest.mark.parametrize("data", STATE_CASES)
def test_partition_state_fast_decoder_matches_reference(data):
    same_as_reference_state(data)


def test_partition_state_fast_decoder_takes_zk_version_from_the_stat():
    got = store_mod._decode_partition_state(PATH, STATE_CASES[0], STAT)
    assert got == LeaderIsrAndControllerEpoch(LeaderAndIsr(1, (1, 2, 3), 0, 7), 1)


ASSIGNMENT_CASES = [
    zn.encode_topic_assignment(TopicAssignment({0: ReplicaAssignment((1, 2, 3)), 1: ReplicaAssignment((2, 3, 4))})),
    zn.encode_topic_assignment(TopicAssignment({0: ReplicaAssignment((1, 2, 4), (4,), (3,))}, "AAAAAAAAAAAAAAAAAAAAAA")),
    b'{"version":1,"partitions":{"0":[1],"007":[2]}}',
    b'{"version":1,"partitions":{"0":[1],"00":[2]}}',  # duplicate ids: the later wins, as the reference
    b'{"version":1,"partitions":{"\xc2\xb2":[1]}}',  # a superscript two is a digit to str.isdigit
    b'{"version":1,"partitions":{"-1":[1]}}',
    b'{"version":1,"partitions":{"":[1]}}',
    b'{"version":1,"partitions":{"0":[1,true]}}',
    b'{"version":1,"partitions":{"0":"1"}}',
    b'{"version":1,"partitions":[]}',
    b'{"version":4,"partitions":{"0":[1]}}',
    b'{"partitions":{"0":[1]}}',
    b'{"version":2,"partitions":{"0":[1]},"adding_replicas":[],"removing_replicas":0}',
    b'{"version":2,"partitions":{"0":[1]},"adding_replicas":{"0":[2]},"removing_replicas":{"1":[3]}}',
    b'{"version":2,"partitions":{"0":[1]},"adding_replicas":[1]}',
    b'{"version":3,"partitions":{"0":[1]},"topic_id":5}',
    b'{"version":3,"partitions":{"0":[1]},"topic_id":null}',
    b'{"version":2,"partitions":{"0":[1]},"x":Infinity}',
    b"{", b"", b"[1]",
]


@pytest.mark.parametrize("data", ASSIGNMENT_CASES)
def test_topic_assignment_fast_decoder_matches_reference(data):
    same_as_reference_assignment(data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 5) | st.floats(allow_nan=False) | st.sampled_from(["1", "x", "²"]),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(["0", "1", "01", "a"]), children,
                                                                      max_size=3),
    max_leaves=8,
)
state_like = st.fixed_dictionaries(
    {}, optional={k: json_values | st.integers(-2, 3) | st.lists(st.integers(-1, 6), max_size=4)
                  for k in ("controller_epoch", "leader", "version", "leader_epoch", "isr", "extra")})
assignment_like = st.fixed_dictionaries(
    {}, optional={"version": st.integers(0, 4) | json_values,
                  "partitions": st.dictionaries(st.sampled_from(["0", "1", "01", "x", "10"]),
                                                st.lists(st.integers(-1, 6), max_size=4) | json_values, max_size=4)
                  | json_values,
                  "adding_replicas": json_values, "removing_replicas": json_values,
                  "topic_id": st.none() | st.text(max_size=3) | st.integers()})


@settings(max_examples=400, deadline=None)
@given(state_like)
def test_partition_state_fast_decoder_matches_reference_on_generated_input(obj):
    same_as_reference_state(json.dumps(obj).encode())


@settings(max_examples=400, deadline=None)
@given(assignment_like)
def test_topic_assignment_fast_decoder_matches_reference_on_generated_input(obj):
    same_as_reference_assignment(json.dumps(obj).encode())


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=40))
def test_fast_decoders_match_reference_on_arbitrary_bytes(data):
    same_as_reference_state(data)
    same_as_reference_assignment(data)


class _FakeClient:
    """Just enough of KazooClient for `_multi_read_async`: records the request it would send."""

    def __init__(self, chroot: str):
        self.chroot = chroot
        self.calls = []
        self.handler = self

    def async_result(self):
        return object()

    def _call(self, request, async_result):
        self.calls.append(request)


@pytest.mark.parametrize("chroot", ["", "/praha-test-1", "/a/b"])
def test_multi_read_prefixes_paths_exactly_as_kazoo(chroot):
    from kazoo.client import _prefix_root

    paths = ["/", "/brokers/topics/t/partitions/0/state", "/x", "/a//b", "/a/b/", "a/b", "/.hidden", "/a/b.",
             "/a/..b", "/a/b/c"]
    client = _FakeClient(chroot)
    store_mod._multi_read_async(client, [(4, p) for p in paths])
    assert client.calls[0].operations == [(4, _prefix_root(chroot, p)) for p in paths]
    for bad in ("/a/./b", "/a/.."):
        with pytest.raises(ValueError):
            store_mod._multi_read_async(client, [(4, bad)])


# -- against ZooKeeper (the session's embedded server) ----------------------------------------
@pytest.mark.integration
def test_watch_data_many_arms_every_watch_before_returning(zk_store):
    events: queue.Queue = queue.Queue()
    paths = [f"/many/{i}" for i in range(50)]
    zk_store.client.ensure_path("/many/0")
    handles = zk_store.watch_data_many(paths, lambda path: (lambda e: events.put((path, e.type))), group="g")
    assert list(handles) == paths and all(h.active for h in handles.values())
    # armed server-side on return: a change right away is seen, for present and absent nodes
    zk_store.client.set("/many/0", b"x")
    zk_store.client.create("/many/7", b"")
    got = {events.get(timeout=5), events.get(timeout=5)}
    assert got == {("/many/0", WatchEventType.CHANGED), ("/many/7", WatchEventType.CREATED)}
    # they re-arm like watch_data's, and cancel by group
    zk_store.client.set("/many/7", b"y")
    assert events.get(timeout=5) == ("/many/7", WatchEventType.CHANGED)
    assert zk_store.cancel_watches("g") == 50
    zk_store.client.set("/many/0", b"z")
    with pytest.raises(queue.Empty):
        events.get(timeout=0.5)


@pytest.mark.integration
@pytest.mark.parametrize("multi_read", [True, False])
def test_bulk_decoding_while_reading_matches_the_reference(zk_store, multi_read):
    zk_store.multi_read_supported = multi_read and zk_store.multi_read_supported
    tps = [TopicPartition("t", p) for p in range(1203)]  # several multi-read batches, a partial last one
    zk_store.client.ensure_path("/brokers/topics/t/partitions")
    for tp in tps:
        if tp.partition % 100 == 5:
            continue  # absent: in neither dict
        data = (b"garbage" if tp.partition % 100 == 9 else
                zn.encode_partition_state(LeaderIsrAndControllerEpoch(LeaderAndIsr(1, (1, 2), tp.partition, 0), 3)))
        zk_store.client.create(zn.tp_state_path(tp), data, makepath=True)
    ok, bad = zk_store.get_partition_states(tps)
    assert list(ok) == [tp for tp in tps if tp.partition % 100 not in (5, 9)]
    assert set(bad) == {tp for tp in tps if tp.partition % 100 == 9}
    raw = zk_store.get_data_bulk([zn.tp_state_path(tp) for tp in tps], use_multi_read=multi_read)
    for tp, state in ok.items():
        data, stat = raw[zn.tp_state_path(tp)]
        assert state == zn.decode_partition_state(data, stat.version)
