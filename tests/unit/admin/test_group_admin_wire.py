"""`GroupAdmin` and `praha groups` against a scripted broker on loopback (real wire format,
no coordinator needed): version negotiation, batching, the coordinator retry rules, and the
command's output and refusals end to end."""
from __future__ import annotations

import json

import pytest

from praha.admin.groups import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    CoordinatorUnavailableError,
    GroupAdmin,
    GroupAdminError,
    GroupApiUnsupportedError,
)
from praha.cli.main import main
from praha.common import TopicPartition as TP
from praha.errors import ErrorCode
from praha.protocol.api_keys import ApiKey

from .fake_group_broker import SERVED, FakeGroup, FakeGroupBroker, FakeMember


@pytest.fixture
def broker():
    with FakeGroupBroker() as b:
        b.topic("orders", 3, start=2, end=10)
        b.groups["idle"] = FakeGroup(state="Empty", offsets={TP("orders", 0): 4, TP("orders", 1): 10})
        b.groups["busy"] = FakeGroup(state="Stable", members=[
            FakeMember("m-1", assignment=(TP("orders", 0), TP("orders", 2)))], offsets={TP("orders", 0): 7},
            subscribed={"orders"})
        yield b


def admin(b: FakeGroupBroker, retries: int = 5) -> GroupAdmin:
    return GroupAdmin(b.bootstrap, timeout=5, retries=retries, sleep=lambda s: None)


def calls(b: FakeGroupBroker, key: int) -> list[int]:
    return [v for k, v in b.requests if k == key]


def cli(capsys, b: FakeGroupBroker, *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        rc = main(["groups", *args, "--bootstrap-server", b.bootstrap])
    except SystemExit as e:
        rc = int(e.code or 0)
    out, err = capsys.readouterr()
    return rc, out, err


# ----------------------------------------------------------------------------- GroupAdmin
def test_highest_common_versions_and_batched_lookups(broker):
    with admin(broker) as a:
        got = a.describe_groups(["idle", "busy", "nobody"])
        assert {g: d.state for g, d in got.items()} == {"idle": "Empty", "busy": "Stable", "nobody": "Dead"}
        assert got["busy"].members[0].assignment == (TP("orders", 0), TP("orders", 2))
        assert got["busy"].assignment_strategy == "range"
        offsets = a.committed_offsets_of(["idle", "busy"])
        assert {g: {tp: c.offset for tp, c in o.items()} for g, o in offsets.items()} == {
            "idle": {TP("orders", 0): 4, TP("orders", 1): 10}, "busy": {TP("orders", 0): 7}}
    # one FindCoordinator v4 and one DescribeGroups v5 for all three; one OffsetFetch v8 for both
    assert calls(broker, ApiKey.FIND_COORDINATOR) == [4, 4]
    assert calls(broker, ApiKey.DESCRIBE_GROUPS) == [5]
    assert calls(broker, ApiKey.OFFSET_FETCH) == [8]


def test_older_brokers_get_older_versions():
    served = {**SERVED, ApiKey.FIND_COORDINATOR: (0, 3), ApiKey.OFFSET_FETCH: (1, 7), ApiKey.LIST_GROUPS: (0, 3)}
    with FakeGroupBroker(served) as b:
        b.topic("t", 1, end=5)
        b.groups["g1"] = FakeGroup(state="Empty", offsets={TP("t", 0): 1})
        b.groups["g2"] = FakeGroup(state="Stable", members=[FakeMember("m")])
        with admin(b) as a:
            assert set(a.committed_offsets_of(["g1", "g2"])) == {"g1", "g2"}
            assert [(g.group_id, g.state) for g in a.list_groups()] == [("g1", None), ("g2", None)]
            with pytest.raises(GroupApiUnsupportedError, match="The broker only supports ListGroups v3, but we "
                                                               "need v4 or newer to request groups by states."):
                a.list_groups(["Empty"])
        assert calls(b, ApiKey.FIND_COORDINATOR) == [3, 3]  # one lookup per group below v4
        assert calls(b, ApiKey.OFFSET_FETCH) == [7, 7]  # one request per group below v8
        assert calls(b, ApiKey.LIST_GROUPS) == [3]


def test_list_groups_sends_the_states_filter_at_v4(broker):
    with admin(broker) as a:
        assert [g.group_id for g in a.list_groups()] == ["busy", "idle"]
        assert [g.group_id for g in a.list_groups(["Empty"])] == ["idle"]


def test_coordinator_errors_are_retried_after_a_new_lookup(broker):
    broker.fail_next(ApiKey.FIND_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    broker.fail_next(ApiKey.DESCRIBE_GROUPS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR)
    with admin(broker) as a:
        assert a.describe_groups(["idle"])["idle"].state == "Empty"
    assert len(calls(broker, ApiKey.FIND_COORDINATOR)) == 4  # 1 refused + 1 per DescribeGroups attempt
    assert len(calls(broker, ApiKey.DESCRIBE_GROUPS)) == 3

    broker.fail_next(ApiKey.OFFSET_COMMIT, ErrorCode.NOT_COORDINATOR)
    with admin(broker) as a:
        assert a.alter_offsets("idle", {TP("orders", 0): 3}) == {TP("orders", 0): 0}
    assert broker.groups["idle"].offsets[TP("orders", 0)] == 3


def test_retries_are_bounded_and_the_error_says_why(broker):
    broker.fail_next(ApiKey.OFFSET_FETCH, *[ErrorCode.COORDINATOR_LOAD_IN_PROGRESS] * 3)
    with admin(broker, retries=3) as a, pytest.raises(CoordinatorUnavailableError) as e:
        a.committed_offsets("idle")
    assert str(e.value) == (f"the coordinator of group 'idle' did not answer after 3 attempts: coordinator "
                            f"127.0.0.1:{broker.port} (id: 1): The coordinator is loading and hence can't process "
                            "requests.")
    assert e.value.code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_other_group_errors_carry_kafkas_code_and_message(broker):
    broker.fail_next(ApiKey.DESCRIBE_GROUPS, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    with admin(broker) as a, pytest.raises(GroupAdminError) as e:
        a.describe_groups(["idle"])
    assert (e.value.code, str(e.value)) == (ErrorCode.GROUP_AUTHORIZATION_FAILED,
                                            "group 'idle': Group authorization failed.")


def test_a_broker_without_the_group_apis_is_named():
    served = {k: v for k, v in SERVED.items() if k != ApiKey.FIND_COORDINATOR}
    with FakeGroupBroker(served) as b, admin(b) as a, pytest.raises(GroupApiUnsupportedError) as e:
        a.describe_groups(["g"])
    assert str(e.value) == (f"the broker at 127.0.0.1:{b.port} serves no version of FindCoordinator (praha groups "
                            "speaks 0-4); consumer groups need brokers with the group coordinator")


def test_nobody_listening_is_a_clear_error():
    with FakeGroupBroker() as b:
        port = b.port
    with GroupAdmin(f"127.0.0.1:{port}", timeout=1, retries=2, sleep=lambda s: None) as a, \
            pytest.raises(GroupAdminError, match=f"no broker answered \\(bootstrap 127.0.0.1:{port}\\)"):
        a.list_groups()


def test_log_offsets_and_group_deletes(broker):
    with admin(broker) as a:
        tps = [TP("orders", 0), TP("orders", 1), TP("nosuch", 0)]
        assert a.log_offsets(tps, EARLIEST_TIMESTAMP) == {TP("orders", 0): 2, TP("orders", 1): 2, TP("nosuch", 0): None}
        assert a.log_offsets(tps[:1], LATEST_TIMESTAMP) == a.latest_offsets(tps[:1]) == {TP("orders", 0): 10}
        assert a.earliest_offsets(tps[:1]) == {TP("orders", 0): 2}
        broker.by_time = {TP("orders", 0): 6}
        assert a.offsets_for_time(tps[:2], 1_700_000_000_000) == {TP("orders", 0): 6, TP("orders", 1): -1}
        with pytest.raises(GroupAdminError, match="a timestamp must not be negative, got -1"):
            a.offsets_for_time(tps, -1)
        assert a.delete_groups(["idle", "busy", "nobody"]) == {
            "idle": 0, "busy": ErrorCode.NON_EMPTY_GROUP, "nobody": ErrorCode.GROUP_ID_NOT_FOUND}
        assert a.delete_offsets("busy", [TP("orders", 0)]) == (0,
                                                               {TP("orders", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC})


# ----------------------------------------------------------------------------- the command
def test_list_and_describe_text_and_json(broker, capsys):
    assert cli(capsys, broker, "--list")[1] == "busy\nidle\n"
    rc, out, _ = cli(capsys, broker, "--list", "--state", "Empty,stable", "--json")
    assert rc == 0
    assert json.loads(out) == {"groups": [
        {"group": "busy", "state": "Stable", "protocol_type": "consumer"},
        {"group": "idle", "state": "Empty", "protocol_type": "consumer"}]}

    rc, out, err = cli(capsys, broker, "--describe", "--group", "idle")
    assert rc == 0
    assert err == "\nConsumer group 'idle' has no active members.\n"
    assert [line.split() for line in out.splitlines()[2:]] == [
        ["idle", "orders", "0", "4", "10", "6", "-", "-", "-"], ["idle", "orders", "1", "10", "10", "0", "-", "-", "-"]]
    rc, out, _ = cli(capsys, broker, "--describe", "--group", "busy", "--offsets", "--json")
    got = json.loads(out)
    assert (got["group"], got["state"], got["coordinator"]["id"]) == ("busy", "Stable", 1)
    assert [(p["partition"], p["current_offset"], p["log_end_offset"], p["lag"], p["consumer_id"])
            for p in got["partitions"]] == [(0, 7, 10, 3, "m-1"), (2, None, 10, None, "m-1")]
    rc, out, _ = cli(capsys, broker, "--describe", "--group", "busy", "--members", "--verbose", "--json")
    assert json.loads(out)["members"][0]["assignment"] == [{"topic": "orders", "partition": 0},
                                                           {"topic": "orders", "partition": 2}]
    rc, out, _ = cli(capsys, broker, "--describe", "--group", "busy", "--state")
    assert out.splitlines()[2].split() == ["busy", f"127.0.0.1:{broker.port}", "(1)", "range", "Stable", "1"]
    rc, _, err = cli(capsys, broker, "--describe", "--group", "nobody")
    assert (rc, err) == (1, "error: Consumer group 'nobody' does not exist.\n")
    # several groups: the others are described, then the command fails
    rc, out, err = cli(capsys, broker, "--describe", "--group", "nobody", "--group", "busy", "--state", "--json")
    assert [g["group"] for g in json.loads(out)["groups"]] == ["busy"]
    assert (rc, err) == (1, "Error: Consumer group 'nobody' does not exist.\n"
                            "error: 1 of 2 consumer groups do not exist: 'nobody'\n")


def test_reset_plans_executes_and_refuses_active_groups(broker, capsys):
    rc, out, err = cli(capsys, broker, "--reset-offsets", "--group", "idle", "--topic", "orders", "--to-offset", "5")
    assert rc == 0
    assert err.startswith("WARN: No action will be performed as the --execute option is missing.")
    assert broker.groups["idle"].offsets == {TP("orders", 0): 4, TP("orders", 1): 10}  # a dry run by default
    assert [line.split() for line in out.splitlines()[2:]] == [["idle", "orders", str(p), "5"] for p in range(3)]

    rc, out, _ = cli(capsys, broker, "--reset-offsets", "--group", "idle", "--all-topics", "--shift-by", "-3",
                     "--execute", "--json")
    assert rc == 0
    assert json.loads(out)["executed"] is True
    assert broker.groups["idle"].offsets == {TP("orders", 0): 2, TP("orders", 1): 7}  # 4-3 clamped to start 2

    broker.by_time = {TP("orders", 0): 6}
    rc, _, err = cli(capsys, broker, "--reset-offsets", "--group", "idle", "--topic", "orders:0,1",
                     "--by-duration", "PT1H", "--execute")
    assert rc == 0
    assert broker.groups["idle"].offsets == {TP("orders", 0): 6, TP("orders", 1): 10}
    assert "WARN: Partition 1 from topic orders is empty. Falling back to latest known offset." in err

    rc, _, err = cli(capsys, broker, "--reset-offsets", "--group", "busy", "--topic", "orders", "--to-earliest",
                     "--execute")
    assert (rc, err.splitlines()[-1]) == (1, "error: Assignments can only be reset if the group 'busy' is "
                                             "inactive, but the current state is Stable.")
    assert broker.groups["busy"].offsets == {TP("orders", 0): 7}

    rc, _, err = cli(capsys, broker, "--reset-offsets", "--group", "idle", "--topic", "nosuch", "--to-earliest")
    assert (rc, err.splitlines()[-1]) == (1, "error: Topic 'nosuch' does not exist.")
    rc, _, err = cli(capsys, broker, "--reset-offsets", "--group", "idle", "--topic", "orders:7", "--to-earliest")
    assert (rc, err.splitlines()[-1]) == (1, "error: Partition orders-7 does not exist (topic orders has 3 partitions)")
    rc, out, err = cli(capsys, broker, "--reset-offsets", "--group", "nobody", "--all-topics", "--to-earliest",
                       "--dry-run")
    assert (rc, out, err) == (0, "", "Nothing to reset: group 'nobody' has no committed offsets.\n")
    # a group that does not exist yet gets offsets (Kafka allows it: the state is Dead)
    rc, _, _ = cli(capsys, broker, "--reset-offsets", "--group", "fresh", "--topic", "orders:1", "--to-latest",
                   "--execute")
    assert rc == 0
    assert broker.groups["fresh"].offsets == {TP("orders", 1): 10}


def test_delete_and_delete_offsets(broker, capsys):
    rc, out, err = cli(capsys, broker, "--delete-offsets", "--group", "busy", "--topic", "orders:0")
    assert rc == 1
    assert "orders                         0               Error: The consumer group is actively " \
                       "subscribed to the topic" in out
    assert err == ("error: could not delete the offsets of 1 partition(s) of group 'busy' (first: orders-0: The "
                   "consumer group is actively subscribed to the topic)\n")
    rc, out, _ = cli(capsys, broker, "--delete-offsets", "--group", "idle", "--topic", "orders", "--json")
    assert rc == 0
    assert json.loads(out)["partitions"][0] == {"topic": "orders", "partition": 0, "error": None}
    assert broker.groups["idle"].offsets == {}
    rc, _, err = cli(capsys, broker, "--delete-offsets", "--group", "nobody", "--topic", "orders")
    assert (rc, err) == (1, "error: Consumer group 'nobody' does not exist.\n")

    rc, out, err = cli(capsys, broker, "--delete", "--group", "idle", "--group", "busy", "--json")
    assert rc == 1
    assert json.loads(out) == {"deleted": ["idle"], "failed": {"busy": "The group is not empty."}}
    assert err == "error: Group 'busy' could not be deleted: The group is not empty.\n"
    broker.groups["busy"].members.clear()
    rc, out, _ = cli(capsys, broker, "--delete", "--all-groups")
    assert (rc, out) == (0, "Deletion of requested consumer groups ('busy') was successful.\n")
    assert broker.groups == {}
