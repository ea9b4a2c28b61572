"""ZkStore's controller-side fast paths write exactly what the reference code writes: the
transaction ops `_commit` builds are kazoo's own, the partition-state and reassignment
encoders (`fast_codecs`) are the `znodes` codecs byte for byte. The streamed reads and the
reassignment cache are checked against ZooKeeper in tests/integration/test_zk_bulk_reads_and_watches.py."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from praha.common import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from praha.testing.fuzz import examples
from praha.zk import fast_codecs
from praha.zk import store as store_mod
from praha.zk import znodes as zn
from praha.zk.auth import ZkAuth, _PathAclTransaction
from praha.zk.ops import CreateOp, DeleteOp, SetDataOp

ints = st.one_of(st.integers(-5, 300), st.integers(-(2**63), 2**63))
odd = st.one_of(st.booleans(), st.floats(allow_nan=False), st.none(), st.text(max_size=3))


# -- partition state encoding -------------------------------------------------------------------
@settings(max_examples=examples(400), deadline=None)
@given(ints, ints, ints, st.lists(ints, max_size=6), st.sampled_from([tuple, list]))
def test_partition_state_encoder_is_the_reference(ce, leader, le, isr, kind):
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, kind(isr), le, 3), ce)
    assert fast_codecs.encode_partition_state(state) == zn.encode_partition_state(state)


@settings(max_examples=examples(200), deadline=None)
@given(st.one_of(ints, odd), st.one_of(ints, odd), st.lists(st.one_of(ints, odd), max_size=4))
def test_partition_state_encoder_leaves_odd_values_to_the_reference(leader, le, isr):
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, tuple(isr), le, 0), 1)
    try:
        expected = zn.encode_partition_state(state)
    except Exception as e:  # noqa: BLE001 - the same error, then
        with pytest.raises(type(e)):
            fast_codecs.encode_partition_state(state)
        return
    assert fast_codecs.encode_partition_state(state) == expected


# -- reassignment encoding ----------------------------------------------------------------------
reassignments = st.dictionaries(
    st.builds(TopicPartition, st.text(max_size=8), st.integers(-3, 10**6)),
    st.one_of(st.lists(st.integers(-3, 10**6), max_size=5).map(tuple), st.lists(st.integers(0, 9), max_size=3)),
    max_size=30,
)


def _joined(fragments) -> bytes:
    return b'{"version":1,"partitions":[' + b",".join(f[1] for f in fragments.values()) + b"]}"


@settings(max_examples=examples(300), deadline=None)
@given(reassignments, reassignments)
def test_reassignment_fragments_join_to_the_reference_encoding(first, second):
    f1 = fast_codecs.reassignment_fragments(first, None)
    assert _joined(f1) == zn.encode_reassignment(first)
    # reusing the entries of an earlier encoding (the controller drops finished partitions)
    merged = {**{tp: r for tp, r in list(first.items())[::2]}, **second}
    f2 = fast_codecs.reassignment_fragments(merged, f1)
    assert _joined(f2) == zn.encode_reassignment(merged)


def test_reassignment_fragments_refuse_values_only_the_reference_can_write():
    assert fast_codecs.reassignment_fragments({TopicPartition("t", True): (1,)}, None) is None
    assert fast_codecs.reassignment_fragments({TopicPartition("t", 0): (1, 2.0)}, None) is None


# -- transaction ops --------------------------------------------------------------------------------
class _Client:
    """Just what TransactionRequest and ZooKeeperClient._commit touch."""

    def __init__(self, chroot, auth=None):
        self.chroot = chroot
        self.default_acl = None
        self.acl_for = (auth or ZkAuth()).acl_for  # as praha's kazoo client: the ACL chosen per path
        self.logger = __import__("logging").getLogger("fake-kazoo")
        self.committed: list = []

    def transaction(self):
        return _PathAclTransaction(self)

    class handler:  # noqa: N801 - kazoo's attribute name
        @staticmethod
        def async_result():
            return None

    def _call(self, request, async_result):
        self.committed.append(request)


PATHS = ["/", "/brokers/topics/t/partitions/0/state", "/x", "/a//b", "/a/b/", "/.hidden", "/a/b.", "/a/..b"]
OPS = (
    [SetDataOp(p, b"d", 3) for p in PATHS] + [SetDataOp("/x", b"", -1)]
    + [CreateOp(p, b"c") for p in PATHS] + [CreateOp("/e", b"", True, False), CreateOp("/s-", b"x", False, True)]
    + [DeleteOp(p, 2) for p in PATHS] + [DeleteOp("/d")]
)


def _reference(client, ops, check):
    tx = _PathAclTransaction(client)
    if check is not None:
        tx.check(*check)
    for op in ops:
        if isinstance(op, SetDataOp):
            tx.set_data(op.path, op.data, op.version)
        elif isinstance(op, CreateOp):
            tx.create(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequential)
        else:
            tx.delete(op.path, op.version)
    return tx.operations


@pytest.mark.parametrize("chroot", ["", "/praha-test-1", "/a/b"])
@pytest.mark.parametrize("check", [None, ("/controller_epoch", 7)])
@pytest.mark.parametrize("auth", [ZkAuth(), ZkAuth("u:p", True)])
def test_commit_builds_the_transaction_kazoo_would(chroot, check, auth):
    client = _Client(chroot, auth)
    store = store_mod.ZkStore("127.0.0.1:1", auth=auth)
    store._client = client
    store._commit(OPS, list(range(len(OPS))), check)
    assert client.committed[0].operations == _reference(client, OPS, check)


def test_commit_leaves_what_kazoo_refuses_to_kazoo():
    store = store_mod.ZkStore("127.0.0.1:1")
    store._client = _Client("")
    for bad in (SetDataOp("/x", "not bytes"), CreateOp("/x", b"", "yes"), DeleteOp("/x", "1"), SetDataOp("a/b", b"")):
        try:
            expected = _reference(store._client, [bad], None)
        except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
                store._commit([bad], [0], None)
            continue
        store._commit([bad], [0], None)
        assert store._client.committed[-1].operations == expected
