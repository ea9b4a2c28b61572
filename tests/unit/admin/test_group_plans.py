"""The pure decisions of `praha groups`: scopes, dates, durations, reset targets for every
mode (with Kafka's clamping), lag, describe rows, assignment bytes and the text tables."""
from __future__ import annotations

import pytest

from praha.admin.group_plans import (
    GroupInputError,
    MemberInfo,
    ResetMode,
    ResetSpec,
    decode_assignment,
    delete_offsets_table,
    encode_assignment,
    export_csv,
    format_assignment,
    lag,
    list_table,
    members_table,
    offsets_table,
    parse_datetime_ms,
    parse_duration_ms,
    parse_reset_csv,
    parse_states,
    parse_topic_arg,
    parse_types,
    partition_rows,
    plan_reset,
    reset_table,
    state_table,
)
from praha.common import TopicPartition as TP

A0, A1, A2 = TP("a", 0), TP("a", 1), TP("a", 2)
EARLIEST = {A0: 5, A1: 0, A2: 0}
LATEST = {A0: 20, A1: 10, A2: 0}
COMMITTED = {A0: 12, A1: 3}


def plan(mode, value=None, parts=(A0, A1, A2), by_time=None, committed=COMMITTED):
    return plan_reset(ResetSpec(mode, value), list(parts), committed, EARLIEST, LATEST, by_time)


# ----------------------------------------------------------------------------- parsing
def test_topic_args_as_kafka_reads_them():
    assert parse_topic_arg("orders") == ("orders", None)
    assert parse_topic_arg("orders:0,2,2") == ("orders", [0, 2])
    for bad, message in [
        ("orders:", "Invalid topic arg 'orders:', expected topic name and partitions"),
        ("a:b:c", "Invalid topic arg 'a:b:c', expected topic name and partitions"),
        (":1", "Invalid topic arg ':1', expected topic name and partitions"),
        ("orders:x", "Invalid partition 'x' specified in topic arg 'orders:x'"),
        ("orders:-1", "Invalid partition '-1' specified in topic arg 'orders:-1'"),
    ]:
        with pytest.raises(GroupInputError) as e:
            parse_topic_arg(bad)
        assert str(e.value) == message


def test_states_are_matched_without_case_and_unknown_ones_refused():
    assert parse_states(["stable,EMPTY"]) == ["Stable", "Empty"]
    assert parse_states(["Stable", "stable", "preparingrebalance"]) == ["Stable", "PreparingRebalance"]
    with pytest.raises(GroupInputError, match="Invalid state list 'Stable,Sleepy'. Valid states are: "
                                              "PreparingRebalance, CompletingRebalance, Stable, Dead, Empty"):
        parse_states(["Stable,Sleepy"])


def test_datetimes_in_kafkas_format_default_to_utc():
    assert parse_datetime_ms("2024-01-02T03:04:05.678") == 1704164645678
    assert parse_datetime_ms("2024-01-02T03:04:05.678Z") == 1704164645678
    assert parse_datetime_ms("2024-01-02T03:04:05") == 1704164645000
    assert parse_datetime_ms("2024-01-02T05:04:05.678+02:00") == 1704164645678
    assert parse_datetime_ms("2024-01-02T05:04:05.678+0200") == 1704164645678
    assert parse_datetime_ms("2024-01-02T01:04:05.678-02") == 1704164645678
    with pytest.raises(GroupInputError, match="It does not contain a 'T' according to ISO8601 format"):
        parse_datetime_ms("2024-01-02 03:04:05")
    for bad in ("2024-13-02T03:04:05.000", "yesterdayTnoon", "2024-01-02T03:04"):
        with pytest.raises(GroupInputError, match="Error parsing timestamp"):
            parse_datetime_ms(bad)


def test_durations_as_java_parses_them():
    assert parse_duration_ms("PT1H") == 3_600_000
    assert parse_duration_ms("P1DT2H3M4.5S") == ((24 + 2) * 60 + 3) * 60_000 + 4_500
    assert parse_duration_ms("pt30m") == 1_800_000
    assert parse_duration_ms("P2D") == 2 * 86_400_000
    assert parse_duration_ms("-PT1S") == -1000
    for bad in ("1h", "P", "PT", "P1H", "PT1D", "P1DT"):
        with pytest.raises(GroupInputError, match=f"Text '{bad}' cannot be parsed to a Duration"):
            parse_duration_ms(bad)


def test_assignment_bytes_round_trip_and_garbage_is_refused():
    parts = [TP("a", 2), TP("a", 0), TP("b", 7)]
    assert decode_assignment(encode_assignment(parts)) == parts
    assert decode_assignment(encode_assignment(parts, version=3)) == parts
    assert decode_assignment(b"") == []
    with pytest.raises(GroupInputError, match="does not decode"):
        decode_assignment(b"\x00\x00\x00\x00\x00\x01\x00\x09ab")


# ----------------------------------------------------------------------------- reset modes
def test_to_earliest_latest_and_current():
    assert plan(ResetMode.TO_EARLIEST).offsets == {A0: 5, A1: 0, A2: 0}
    assert plan(ResetMode.TO_LATEST).offsets == {A0: 20, A1: 10, A2: 0}
    # a partition with no committed offset goes to the log end, as Kafka's --to-current
    assert plan(ResetMode.TO_CURRENT).offsets == {A0: 12, A1: 3, A2: 0}


def test_to_offset_is_clamped_into_the_log_with_kafkas_warning():
    p = plan(ResetMode.TO_OFFSET, 8)
    assert p.offsets == {A0: 8, A1: 8, A2: 0}
    assert p.warnings == ["New offset (8) is higher than latest offset for topic partition a-2. Value will be set to 0"]
    p = plan(ResetMode.TO_OFFSET, 2, parts=[A0])
    assert p.offsets == {A0: 5}
    assert p.warnings == [
        "New offset (2) is lower than earliest offset for topic partition a-0. Value will be set to 5"
    ]


def test_shift_by_moves_from_the_committed_offset_and_is_clamped():
    assert plan(ResetMode.SHIFT_BY, 3, parts=[A0, A1]).offsets == {A0: 15, A1: 6}
    p = plan(ResetMode.SHIFT_BY, -10, parts=[A0, A1])
    assert p.offsets == {A0: 5, A1: 0}
    assert len(p.warnings) == 2
    assert plan(ResetMode.SHIFT_BY, 100, parts=[A0]).offsets == {A0: 20}
    with pytest.raises(GroupInputError, match="Cannot shift offset for partition a-2 since there is no current "
                                              "committed offset"):
        plan(ResetMode.SHIFT_BY, 1)


def test_by_time_takes_the_found_offset_or_falls_back_to_the_log_end():
    for mode in (ResetMode.TO_DATETIME, ResetMode.BY_DURATION):
        p = plan(mode, 1_700_000_000_000, by_time={A0: 7, A1: -1, A2: None})
        assert p.offsets == {A0: 7, A1: 10, A2: 0}
        assert p.warnings == ["Partition 1 from topic a is empty. Falling back to latest known offset.",
                              "Partition 2 from topic a is empty. Falling back to latest known offset."]


def test_unknown_log_offsets_are_errors():
    with pytest.raises(GroupInputError, match="Error getting starting offset of topic partition: b-0"):
        plan(ResetMode.TO_EARLIEST, parts=[TP("b", 0)])
    with pytest.raises(GroupInputError, match="Error getting ending offset of topic partition: b-0"):
        plan(ResetMode.TO_OFFSET, 3, parts=[TP("b", 0)])


def test_lag():
    assert lag(3, 10) == 7
    assert lag(None, 10) is None
    assert lag(3, None) is None
    assert lag(-1, 10) is None


# ----------------------------------------------------------------------------- describe rows and tables
MEMBERS = [
    MemberInfo("m-small", "c1", "/10.0.0.1", None, (TP("a", 2),)),
    MemberInfo("m-big", "c2", "/10.0.0.2", None, (TP("a", 1), TP("a", 0))),
    MemberInfo("m-idle", "c3", "/10.0.0.3", None, ()),
]


def test_partition_rows_list_owners_first_then_unowned_commits():
    rows = partition_rows("g", MEMBERS, {A0: 4, A2: 9, TP("b", 0): 1}, {A0: 10, A1: 10, A2: 9})
    assert [(r.topic, r.partition, r.current_offset, r.log_end_offset, r.lag, r.consumer_id) for r in rows] == [
        ("a", 0, 4, 10, 6, "m-big"), ("a", 1, None, 10, None, "m-big"), ("a", 2, 9, 9, 0, "m-small"),
        ("b", 0, 1, None, None, None)]
    assert rows[0].as_json()["lag"] == 6


def test_offsets_table_has_kafkas_columns():
    rows = partition_rows("g", MEMBERS[:1], {A2: 4}, {A2: 9})
    assert offsets_table(rows) == [
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG             "
        "CONSUMER-ID     HOST            CLIENT-ID",
        "g               a               2          4               9               5               "
        "m-small         /10.0.0.1       c1"]


def test_members_table_shows_instance_ids_only_for_static_members():
    lines = members_table("g", MEMBERS, verbose=True)
    assert lines[0].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
    assert lines[2].split() == ["g", "m-big", "/10.0.0.2", "c2", "2", "a(0,1)"]
    assert lines[3].split() == ["g", "m-idle", "/10.0.0.3", "c3", "0", "-"]
    static = [MemberInfo("m", "c", "/h", "instance-1", (A0,))]
    assert members_table("g", static, verbose=False)[0].split() == [
        "GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    assert format_assignment([TP("b", 1), A1, A0]) == "a(0,1), b(1)"


def test_small_tables():
    assert state_table("g", "127.0.0.1:9092  (1)", "range", "Stable", 3)[1].split() == [
        "g", "127.0.0.1:9092", "(1)", "range", "Stable", "3"]
    assert list_table([("g1", "Empty")]) == ["GROUP                     STATE", "g1                        Empty"]
    assert reset_table("g", {A1: 3, A0: 0})[1:] == [
        "g                              a                              0          0",
        "g                              a                              1          3"]
    assert delete_offsets_table({A0: None, A1: "The group is not empty."})[1:] == [
        "a                              0               Successful",
        "a                              1               Error: The group is not empty."]


def test_a_reset_file_reads_back_what_export_wrote_and_is_clamped_into_the_log():
    a0, a1 = TP("a", 0), TP("a", 1)
    one = export_csv({"g": {a1: 7, a0: 3}}, with_group=False)
    assert one == "a,0,3\na,1,7\n"
    assert parse_reset_csv(one, "g") == {"g": {a0: 3, a1: 7}}
    many = export_csv({"g": {a0: 3}, "h": {a1: 9}}, with_group=True)
    assert parse_reset_csv(many, None) == {"g": {a0: 3}, "h": {a1: 9}}
    assert parse_reset_csv(many, "g") == {"g": {a0: 3}, "h": {a1: 9}}  # four fields: the group form
    with pytest.raises(GroupInputError, match="line 2 of the reset file: partition and offset must be whole"):
        parse_reset_csv("a,0,3\na,x,1\n", "g")
    with pytest.raises(GroupInputError, match="expected group,topic,partition,offset"):
        parse_reset_csv("a,0\n", None)
    plan = plan_reset(ResetSpec(ResetMode.FROM_FILE), [a0, a1], {}, {a0: 2, a1: 0}, {a0: 10, a1: 5},
                      requested={a0: 0, a1: 9})
    assert plan.offsets == {a0: 2, a1: 5}
    assert len(plan.warnings) == 2


def test_group_types_for_list_type():
    assert parse_types(["consumer,CLASSIC", "consumer"]) == ["consumer", "classic"]
    assert parse_states(["reconciling", "Assigning"]) == ["Reconciling", "Assigning"]  # KIP-848's states
    with pytest.raises(GroupInputError, match="Invalid types list 'share'. Valid types are: classic, consumer"):
        parse_types(["share"])
    assert list_table([("g1", "Classic", "Empty")], ("TYPE", "STATE")) == [
        "GROUP                     TYPE                 STATE", "g1                        Classic              Empty"]
