"""The console's pure decisions: a scan request from a query string, the filter, the ranges a
scan reads, how values are shown, Avro decoding, the timeline's events."""
from __future__ import annotations

import io
import json

import pytest

from praha.admin.group_plans import ResetMode
from praha.analytics.timeline import Kind, events_of
from praha.console.app import PAGES, _reset_value
from praha.console.cluster_client import ConsoleError
from praha.console.messages import Format, ScanInputError, ScanRequest, StartAt, matches, plan_ranges, render_value
from praha.console.schemas import decode_avro


def test_a_query_string_becomes_a_scan_request_or_a_clear_error():
    r = ScanRequest.parse("t", {"start": "offset", "offset": "5", "order": "oldest", "value": "x", "partition": "2"})
    assert (r.start, r.offset, r.newest_first, r.value, r.partition) == (StartAt.OFFSET, 5, False, "x", 2)
    with pytest.raises(ScanInputError, match="offset must be a whole number"):
        ScanRequest.parse("t", {"start": "offset", "offset": "ten"})
    with pytest.raises(ScanInputError, match="needs the offset"):
        ScanRequest.parse("t", {"start": "offset"})
    with pytest.raises(ScanInputError, match="date-time"):
        ScanRequest.parse("t", {"since": "yesterday"})
    with pytest.raises(ScanInputError, match="ends before it begins"):
        ScanRequest.parse("t", {"since": "2024-01-02T00:00:00", "until": "2024-01-01T00:00:00"})
    assert ScanRequest.parse("t", {"time": "2024-01-01T00:00:00Z", "start": "time"}).time_ms == 1704067200000


def test_the_filter_checks_key_value_header_and_time():
    r = ScanRequest("t", key="k1", value="apple", header="src=web", since_ms=10, until_ms=20)
    assert matches(r, b"k12", b"an apple", 15, [("src", b"web-1")])
    assert not matches(r, b"k2", b"an apple", 15, [("src", b"web")])
    assert not matches(r, b"k1", b"a pear", 15, [("src", b"web")])
    assert not matches(r, b"k1", b"apple", 15, [("src", b"app")])
    assert not matches(r, b"k1", b"apple", 21, [("src", b"web")])
    assert matches(ScanRequest("t", header="src"), None, None, 0, [("src", None)])


def test_scan_ranges_newest_first_take_the_last_share_and_oldest_first_start_where_asked():
    bounds = {0: (0, 1000), 1: (500, 600)}
    newest = plan_ranges(ScanRequest("t", max_scan=200), bounds)
    assert newest == {0: (900, 1000), 1: (500, 600)}
    oldest = plan_ranges(ScanRequest("t", start=StartAt.OFFSET, offset=550, newest_first=False, max_scan=100), bounds)
    assert oldest == {0: (550, 600), 1: (550, 600)}
    by_time = plan_ranges(ScanRequest("t", start=StartAt.TIME, time_ms=1, newest_first=False), bounds, {0: 70, 1: -1})
    assert by_time == {0: (70, 1000)}  # no record that recent in partition 1: nothing to read


def test_values_show_as_text_json_or_hex():
    assert render_value(b'{"a":1}', Format.JSON) == '{\n  "a": 1\n}'
    assert render_value(b"\x00\xff", Format.HEX) == "00 ff"
    assert render_value(b"plain", Format.JSON).endswith("(not JSON)")
    assert render_value(None, Format.TEXT) == "(null)"


def test_avro_binary_decodes_records_unions_arrays_and_maps():
    schema = {"type": "record", "name": "R", "fields": [
        {"name": "id", "type": "long"}, {"name": "name", "type": "string"},
        {"name": "tag", "type": ["null", "string"]}, {"name": "xs", "type": {"type": "array", "items": "int"}},
        {"name": "m", "type": {"type": "map", "values": "boolean"}},
        {"name": "e", "type": {"type": "enum", "name": "E", "symbols": ["A", "B"]}}]}
    data = bytes([0x54]) + b"\x06bob" + b"\x02\x04hi" + b"\x04\x02\x04\x00" + b"\x02\x02k\x01\x00" + b"\x02"
    assert decode_avro(schema, io.BytesIO(data)) == {"id": 42, "name": "bob", "tag": "hi", "xs": [1, 2],
                                                     "m": {"k": True}, "e": "B"}


def test_timeline_events_come_from_the_state_change_lines():
    elected = events_of({"time_ms": 5, "broker_id": 2, "controller_epoch": 7, "event": "ControllerElected"})
    assert [(e.kind, e.controller_epoch) for e in elected] == [(Kind.CONTROLLER, 7)]
    change = events_of({"time_ms": 6, "event": "BrokerChange", "new": [3], "dead": [1], "bounced": []})
    assert sorted(e.kind.name for e in change) == ["BROKER_DOWN", "BROKER_UP"]
    leaders = events_of({"time_ms": 7, "event": "PartitionStateChange", "target": "OnlinePartition",
                         "election": "offline", "leaders": {"t-0": [2, 5, json.dumps([2])]}, "unclean": ["t-0"]})
    assert leaders[0].kind is Kind.LEADER
    assert "1 offline elections (1 unclean): t-0 → 2" in leaders[0].text
    assert events_of({"time_ms": 8, "event": "PartitionStateChange", "target": "OfflinePartition", "count": 3}) == []
    assert events_of({"time_ms": 9, "event": "IsrChange", "isr": {"t-1": [1, 2]}})[0].kind is Kind.ISR


def test_a_reset_to_a_future_time_is_refused_before_anything_is_asked():
    with pytest.raises(ConsoleError, match="in the future"):
        _reset_value(ResetMode.TO_DATETIME, "2999-01-01T00:00:00.000")
    with pytest.raises(ConsoleError, match="whole number"):
        _reset_value(ResetMode.SHIFT_BY, "back")
    assert _reset_value(ResetMode.TO_EARLIEST, "") is None


def test_the_issue_addresses_are_all_pages():
    wanted = {"/", "/brokers", "/topics", "/topics/{name}", "/topics/{name}/messages", "/groups", "/groups/{group_id}",
              "/transactions", "/acls", "/schemas", "/timeline"}
    assert {p.path for p in PAGES} == wanted


def test_an_acl_form_is_checked_before_anything_is_sent():
    from praha.console.app import acl_of_form

    form = {"principal": "User:alice", "host": "", "operation": "READ", "permission": "ALLOW",
            "resource_type": "TOPIC", "name": "orders", "pattern": "LITERAL"}
    row = acl_of_form(form)
    assert (row.principal, row.host, row.operation, row.name) == ("User:alice", "*", "READ", "orders")
    assert acl_of_form({**form, "resource_type": "CLUSTER", "name": ""}).name == "kafka-cluster"
    with pytest.raises(ConsoleError, match="a principal is User:name"):
        acl_of_form({**form, "principal": "alice"})
    with pytest.raises(ConsoleError, match="the operation must be one of"):
        acl_of_form({**form, "operation": "READALL"})
    with pytest.raises(ConsoleError, match="needs a name"):
        acl_of_form({**form, "name": " "})
