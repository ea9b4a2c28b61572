"""The failover read path of ZkStore: the fast decoders (`fast_codecs`) equal the reference
codecs in `znodes` (same value or the same error) on every input; multi-reads prefix paths
exactly as kazoo. Against ZooKeeper: tests/integration/test_zk_bulk_reads_and_watches.py."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kazoo.protocol.states import ZnodeStat

from praha.common import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicAssignment,
)
from praha.errors import ZNodeDecodeError
from praha.testing.fuzz import examples
from praha.zk import fast_codecs
from praha.zk import znodes as zn
from praha.zk.multiread import multi_read_async

STAT = ZnodeStat(0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0)
PATH = "/brokers/topics/t/partitions/0/state"
TOPIC_PATH = "/brokers/topics/t"


def outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except ZNodeDecodeError as e:
        return ("error", e.path, e.reason)


def same_as_reference_state(data: bytes) -> None:
    fast = outcome(fast_codecs.decode_partition_state, PATH, data, STAT)
    ref = outcome(zn.decode_partition_state, data, STAT.version, PATH)
    assert fast == ref


def same_as_reference_assignment(data: bytes) -> None:
    fast = outcome(fast_codecs.decode_topic_assignment, TOPIC_PATH, data, STAT)
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
    got = fast_codecs.decode_partition_state(PATH, STATE_CASES[0], STAT)
    assert got == LeaderIsrAndControllerEpoch(LeaderAndIsr(1, (1, 2, 3), 0, 7), 1)


ASSIGNMENT_CASES = [
    zn.encode_topic_assignment(TopicAssignment({0: ReplicaAssignment((1, 2, 3)), 1: ReplicaAssignment((2, 3, 4))})),
    zn.encode_topic_assignment(TopicAssignment({0: ReplicaAssignment((1, 2, 4), (4,), (3,))},
                                               "AAAAAAAAAAAAAAAAAAAAAA")),
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


@settings(max_examples=examples(400), deadline=None)
@given(state_like)
def test_partition_state_fast_decoder_matches_reference_on_generated_input(obj):
    same_as_reference_state(json.dumps(obj).encode())


@settings(max_examples=examples(400), deadline=None)
@given(assignment_like)
def test_topic_assignment_fast_decoder_matches_reference_on_generated_input(obj):
    same_as_reference_assignment(json.dumps(obj).encode())


@settings(max_examples=examples(200), deadline=None)
@given(st.binary(max_size=40))
def test_fast_decoders_match_reference_on_arbitrary_bytes(data):
    same_as_reference_state(data)
    same_as_reference_assignment(data)


class _FakeClient:
    """Just enough of KazooClient for `multi_read_async`: records the request it would send."""

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
    multi_read_async(client, [(4, p) for p in paths])
    assert client.calls[0].operations == [(4, _prefix_root(chroot, p)) for p in paths]
    for bad in ("/a/./b", "/a/.."):
        with pytest.raises(ValueError, match="relative paths not allowed"):
            multi_read_async(client, [(4, bad)])
