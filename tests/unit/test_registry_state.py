"""The registry's decisions on its state, with a store that applies the records it is
given at once (the `_schemas` topic is exercised in tests/integration/test_schema_registry.py):
ids and versions, deduplication, deletes (soft, then permanent), references, configs,
modes, and Confluent's error codes for each refusal. Also the `_schemas` record formats."""
from __future__ import annotations

import json
import threading

import pytest

from praha.registry import api
from praha.registry.errors import RegistryError
from praha.registry.records import Key, KeyType, decode_schema_value
from praha.registry.state import LATEST, RegistryState, parse_version


class AppliedAtOnce:
    def __init__(self, state: RegistryState):
        self.state, self.lock = state, threading.Lock()
        self.records: list[tuple[bytes, bytes | None]] = []

    def catch_up(self) -> None:
        pass

    def append(self, writes) -> None:
        with self.lock:
            for k, v in writes:
                self.records.append((k, v))
                self.state.apply(k, v)


@pytest.fixture
def reg():
    state = RegistryState()
    counter = iter(range(1, 1000))
    return api.Registry(state, AppliedAtOnce(state), lambda at_least: max(next(counter), at_least + 1))


def call(reg, method, path, body=None, **query):
    route, params = api.match(method, path)
    c = api.Call(method, params, {k: str(v) for k, v in query.items()},
                 json.dumps(body).encode() if body is not None else b"")
    return route.handler(reg, c) if route.writes else api.answer(reg, route, c)


def code(reg, *args, **kw) -> int:
    with pytest.raises(RegistryError) as e:
        call(reg, *args, **kw)
    return e.value.error_code


def enum(*symbols, name="E"):
    return {"schema": json.dumps({"type": "enum", "name": name, "symbols": list(symbols)})}


def test_ids_are_global_versions_per_subject_and_duplicates_dedupe(reg):
    a = call(reg, "POST", "/subjects/s1/versions", enum("A"))[1]
    assert a == {"id": 1, "version": 1, "subject": "s1"}
    assert call(reg, "POST", "/subjects/s1/versions", enum("A"))[1]["id"] == 1  # nothing new written
    assert len(reg.store.records) == 1
    assert call(reg, "POST", "/subjects/s2/versions", enum("A"))[1] == {"id": 1, "version": 1, "subject": "s2"}
    b = call(reg, "POST", "/subjects/s1/versions", enum("A", "B"))[1]
    assert (b["id"], b["version"]) == (2, 2)
    assert call(reg, "GET", "/subjects")[1] == ["s1", "s2"]
    assert call(reg, "GET", "/schemas/ids/1/versions")[1] == [{"subject": "s1", "version": 1},
                                                              {"subject": "s2", "version": 1}]
    assert call(reg, "POST", "/subjects/s1", enum("A"))[1]["version"] == 1
    assert code(reg, "POST", "/subjects/s1", enum("Z")) == 40403
    assert code(reg, "POST", "/subjects/nope", enum("A")) == 40401


def test_compatibility_refusal_stores_nothing(reg):
    call(reg, "POST", "/subjects/s/versions", enum("A", "B"))
    assert code(reg, "POST", "/subjects/s/versions", enum("A")) == 409  # BACKWARD: B unreadable
    assert call(reg, "GET", "/subjects/s/versions")[1] == [1]
    assert call(reg, "POST", "/compatibility/subjects/s/versions/latest", enum("A"), verbose="true")[1][
        "is_compatible"] is False
    call(reg, "PUT", "/config/s", {"compatibility": "NONE"})
    assert call(reg, "POST", "/subjects/s/versions", enum("A"))[1]["version"] == 2
    assert call(reg, "GET", "/config/s")[1] == {"compatibilityLevel": "NONE"}
    assert call(reg, "DELETE", "/config/s")[1] == {"compatibilityLevel": "NONE"}
    assert code(reg, "GET", "/config/s") == 40408
    assert call(reg, "GET", "/config/s", defaultToGlobal="true")[1] == {"compatibilityLevel": "BACKWARD"}
    assert code(reg, "PUT", "/config", {"compatibility": "SIDEWAYS"}) == 42203


def test_soft_then_permanent_deletes(reg):
    call(reg, "POST", "/subjects/s/versions", enum("A"))
    call(reg, "POST", "/subjects/s/versions", enum("A", "B"))
    assert code(reg, "DELETE", "/subjects/s/versions/1", permanent="true") == 40407  # soft first
    assert call(reg, "DELETE", "/subjects/s/versions/1")[1] == 1
    assert code(reg, "DELETE", "/subjects/s/versions/1") == 40406
    assert call(reg, "GET", "/subjects/s/versions")[1] == [2]
    assert call(reg, "GET", "/subjects/s/versions", deleted="true")[1] == [1, 2]
    assert code(reg, "GET", "/subjects/s/versions/1") == 40402
    assert call(reg, "GET", "/subjects/s/versions/1", deleted="true")[1]["version"] == 1
    assert code(reg, "DELETE", "/subjects/s", permanent="true") == 40405
    assert call(reg, "DELETE", "/subjects/s")[1] == [2]
    assert code(reg, "DELETE", "/subjects/s") == 40404
    assert code(reg, "GET", "/subjects/s/versions") == 40401
    assert call(reg, "GET", "/schemas/ids/1")[1]["schema"]  # soft-deleted schemas stay readable by id
    assert call(reg, "DELETE", "/subjects/s", permanent="true")[1] == [1, 2]
    assert code(reg, "GET", "/schemas/ids/1") == 40403
    assert call(reg, "GET", "/subjects", deleted="true")[1] == []
    # a version number is never handed out again after a soft delete; ids never are
    call(reg, "POST", "/subjects/t/versions", enum("A"))
    call(reg, "DELETE", "/subjects/t/versions/1")
    again = call(reg, "POST", "/subjects/t/versions", enum("C"))[1]
    assert again["version"] == 2
    assert again["id"] > 2


def test_references(reg):
    money = {"schema": json.dumps({"type": "record", "name": "Money", "namespace": "fin",
                                   "fields": [{"name": "cents", "type": "long"}]})}
    call(reg, "POST", "/subjects/money/versions", money)
    order = {"schema": json.dumps({"type": "record", "name": "Order",
                                   "fields": [{"name": "price", "type": "fin.Money"}]}),
             "references": [{"name": "fin.Money", "subject": "money", "version": 1}]}
    oid = call(reg, "POST", "/subjects/order/versions", order)[1]["id"]
    assert call(reg, "GET", "/subjects/money/versions/1/referencedby")[1] == [oid]
    assert call(reg, "GET", f"/schemas/ids/{oid}")[1]["references"] == order["references"]
    assert code(reg, "DELETE", "/subjects/money/versions/1") == 42206
    assert code(reg, "DELETE", "/subjects/money") == 42206
    missing = dict(order, references=[{"name": "fin.Money", "subject": "money", "version": 7}])
    assert code(reg, "POST", "/subjects/other/versions", missing) == 42201
    assert code(reg, "GET", "/subjects/other/versions") == 40401


def test_modes(reg):
    call(reg, "PUT", "/mode/s", {"mode": "READONLY"})
    assert code(reg, "POST", "/subjects/s/versions", enum("A")) == 42205
    assert call(reg, "GET", "/mode/s")[1] == {"mode": "READONLY"}
    assert call(reg, "DELETE", "/mode/s")[1] == {"mode": "READONLY"}
    assert code(reg, "GET", "/mode/s") == 40409
    assert code(reg, "PUT", "/mode", {"mode": "WRITEONLY"}) == 42204
    call(reg, "PUT", "/mode", {"mode": "IMPORT"})
    assert call(reg, "POST", "/subjects/s/versions", {**enum("A"), "id": 42, "version": 3})[1] == {
        "id": 42, "version": 3, "subject": "s"}


@pytest.mark.parametrize(("text", "expected"),
                         [("latest", LATEST), ("-1", LATEST), ("1", 1), ("2147483647", 2**31 - 1)])
def test_versions(text, expected):
    assert parse_version(text) == expected


@pytest.mark.parametrize("text", ["0", "-2", "2147483648", "one", ""])
def test_bad_versions(text):
    with pytest.raises(RegistryError) as e:
        parse_version(text)
    assert e.value.error_code == 42202


def test_bad_bodies(reg):
    assert code(reg, "POST", "/subjects/s/versions", None) == 42201  # {} has no schema
    route, params = api.match("POST", "/subjects/s/versions")
    with pytest.raises(RegistryError) as e:
        route.handler(reg, api.Call("POST", params, {}, b'{"schema": '))
    assert e.value.error_code == 400
    assert code(reg, "POST", "/subjects/s/versions", {"schema": "{}", "schemaType": "XML"}) == 42201


def test_records_are_confluents_format(reg):
    call(reg, "POST", "/subjects/s/versions", enum("A"))
    call(reg, "PUT", "/config", {"compatibility": "FULL"})
    (k1, v1), (k2, v2) = reg.store.records
    assert json.loads(k1) == {"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1}
    assert json.loads(v1) == {"subject": "s", "version": 1, "id": 1, "schema": enum("A")["schema"], "deleted": False}
    assert json.loads(k2) == {"keytype": "CONFIG", "subject": None, "magic": 0}
    assert json.loads(v2) == {"compatibilityLevel": "FULL"}
    assert decode_schema_value(v1).id == 1
    assert Key.decode(k1) == Key(KeyType.SCHEMA, "s", 1)
    assert Key.decode(b"not json") is None


def test_every_route_is_served():
    """The table: every path the client library calls has a route."""
    for method, path in [("GET", "/subjects"), ("POST", "/subjects/x/versions"), ("GET", "/subjects/x/versions/latest"),
                         ("GET", "/subjects/x/versions/1/schema"), ("GET", "/subjects/x/versions/1/referencedby"),
                         ("POST", "/subjects/x"), ("DELETE", "/subjects/x"), ("DELETE", "/subjects/x/versions/1"),
                         ("GET", "/subjects/x/metadata"), ("GET", "/schemas/ids/1"), ("GET", "/schemas/ids/1/schema"),
                         ("GET", "/schemas/ids/1/subjects"), ("GET", "/schemas/ids/1/versions"),
                         ("GET", "/schemas/types"), ("POST", "/compatibility/subjects/x/versions/latest"),
                         ("POST", "/compatibility/subjects/x/versions"), ("GET", "/config"), ("PUT", "/config/x"),
                         ("DELETE", "/config/x"), ("GET", "/mode"), ("PUT", "/mode/x"), ("DELETE", "/mode/x"),
                         ("GET", "/contexts")]:
        assert api.match(method, path) is not None, (method, path)
