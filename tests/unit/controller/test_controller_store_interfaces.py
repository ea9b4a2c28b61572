"""ZooKeeper's store and the in-memory fake both implement the controller's store interfaces
call for call: every method the flows may call exists, with the protocol's parameters in
its order (extra parameters only with defaults). A rename in either fails here, not in a
controller flow at run time."""
from __future__ import annotations

import inspect

import pytest

from praha.controller.store_api import ControllerSeatStore, ControllerStore, PartitionStateStore
from praha.testing.fake_controller_store import FakeControllerStore
from praha.zk.store import ZkStore


def _protocol_methods(protocol: type) -> dict[str, inspect.Signature]:
    out = {}
    for klass in protocol.__mro__:
        if klass.__module__ != "praha.controller.store_api":
            continue
        for name, member in vars(klass).items():
            if inspect.isfunction(member) and not name.startswith("_"):
                out.setdefault(name, inspect.signature(member))
    return out


def _mismatch(implementation: type, name: str, wanted: inspect.Signature) -> str | None:
    method = getattr(implementation, name, None)
    if method is None:
        return "missing"
    got = [p for p in inspect.signature(method).parameters.values() if p.name != "self"]
    want = [p for p in wanted.parameters.values() if p.name != "self"]
    if [p.name for p in got[:len(want)]] != [p.name for p in want]:
        return f"parameters {[p.name for p in got]}, protocol has {[p.name for p in want]}"
    if any(p.default is inspect.Parameter.empty for p in got[len(want):]):
        return "extra parameters without defaults"
    missing_defaults = [p.name for g, p in zip(got, want) if p.default is not inspect.Parameter.empty
                        and g.default is inspect.Parameter.empty]
    return f"no default for {missing_defaults}" if missing_defaults else None


def test_the_protocols_name_every_call_of_the_flows():
    assert set(_protocol_methods(PartitionStateStore)) < set(_protocol_methods(ControllerStore))
    assert set(_protocol_methods(ControllerStore)) < set(_protocol_methods(ControllerSeatStore))
    assert {"stream_partition_states", "set_topic_assignments", "watch_data_many"} <= set(
        _protocol_methods(ControllerStore))


@pytest.mark.parametrize(("implementation", "protocol"), [
    (ZkStore, ControllerSeatStore), (FakeControllerStore, ControllerStore),
])
def test_store_implements_the_protocol(implementation, protocol):
    wrong = {name: why for name, sig in _protocol_methods(protocol).items()
             if (why := _mismatch(implementation, name, sig)) is not None}
    assert wrong == {}


def test_a_renamed_parameter_is_caught():
    class Renamed(FakeControllerStore):
        def delete_topic_znodes(self, names, epoch_zk_version):  # "topics" in the protocol
            pass

    assert _mismatch(Renamed, "delete_topic_znodes", _protocol_methods(ControllerStore)["delete_topic_znodes"])
    assert _mismatch(Renamed, "get_reassignments", _protocol_methods(ControllerStore)["get_reassignments"]) is None
