"""Security declared, not remembered: every route of the broker's API table names the ACL
checks its handler makes, and every API refuses a principal without ACLs with the error
of a check it declares. Run against a fake broker (`praha.testing.fake_broker`): no
cluster, so each API's unauthorised answer costs milliseconds."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from praha.broker.handlers.authorization import RequestAuthorizer
from praha.broker.handlers.routes import OPEN_APIS, REFUSALS, ROUTES, RequestHandlers
from praha.errors import ErrorCode
from praha.protocol.api_keys import ApiKey
from praha.protocol.error_response import fields_of
from praha.protocol.framing import Session, decode_request, decode_response, encode_request, encode_response
from praha.protocol.registry import response_class
from praha.security.acl import AuthorizerConfig
from praha.testing.fake_broker import FakeBroker, sample_request

NOBODY = Session(principal="User:nobody", listener="PLAINTEXT", security_protocol="PLAINTEXT",
                 client_host="/127.0.0.1")


def test_every_route_but_authentication_declares_its_checks():
    open_routes = {r.api_key for r in ROUTES if not r.acls}
    assert open_routes == OPEN_APIS, (
        f"routes without ACL checks: {sorted(ApiKey(k).name for k in open_routes - OPEN_APIS)}"
    )


def codes(obj) -> set[int]:
    """Every error code in a response object (any field ending in error_code), depth first."""
    out = set()
    for f in fields_of(obj):
        value = getattr(obj, f.name, None)
        if f.name.endswith("error_code") and value is not None:
            out.add(int(value))
        elif f.is_struct and f.is_array and value:
            for item in value:
                out |= codes(item)
    return out


#: fields the sample request must not leave at its generic value
SAMPLE_FIELDS = {
    ApiKey.FETCH: {"replica_id": -1},  # a consumer (a follower's refusal is the cluster's)
    ApiKey.FIND_COORDINATOR: {"key_type": 0},  # a group (2 is no key type)
}


class Listing:
    """A coordinator with one group and one transaction, which a principal without ACLs
    must not be shown."""

    def list_groups(self, states, types=None):
        return ErrorCode.NONE, [SimpleNamespace(group_id="t", protocol_type="consumer", state="Stable",
                                                group_type="classic")]

    def list_transactions(self, states, producer_ids, duration):
        return ErrorCode.NONE, [SimpleNamespace(transactional_id="t", producer_id=7, state="Ongoing")]


def answer(api_key: int, version: int):
    authz = RequestAuthorizer(AuthorizerConfig(), SimpleNamespace(bindings=[]))  # on, with no ACL at all
    handlers = RequestHandlers(FakeBroker(authz, topics=("t",), group_coordinator=Listing(),
                                          txn_coordinator=Listing()))
    request = sample_request(api_key, version)
    for name, value in SAMPLE_FIELDS.get(api_key, {}).items():
        setattr(request, name, value)
    # through the bytes, decoded as the socket server decodes a frame (Produce: its view of the frame)
    req = decode_request(encode_request(request, version, 1, "c")[4:], session=NOBODY)
    response = asyncio.run(handlers.handlers[api_key](req))
    frame = bytes(encode_response(req.header, response, version))  # the answer as a client reads it
    return decode_response(response_class(api_key), frame[4:], version), authz


REFUSING = [pytest.param(r, id=ApiKey(r.api_key).name) for r in ROUTES if r.acls and r.refuses]


@pytest.mark.parametrize("route", REFUSING)
def test_a_principal_without_acls_is_refused_as_declared(route):
    response, authz = answer(route.api_key, route.versions[1])
    declared = {c.refusal for c in route.acls}
    got = codes(response)
    assert got & declared, f"{ApiKey(route.api_key).name} answered {got}, declared refusals {declared}"
    assert got <= declared | {ErrorCode.NONE}, f"{ApiKey(route.api_key).name} answered {got} besides the refusal"
    assert authz.denied >= 1  # the authoriser was asked, and said no


@pytest.mark.parametrize("route", [pytest.param(r, id=ApiKey(r.api_key).name) for r in ROUTES
                                   if r.acls and not r.refuses])
def test_answers_shaped_by_acls_show_nothing_to_a_principal_without_them(route):
    response, _ = answer(route.api_key, route.versions[1])
    listed = [getattr(response, f.name) for f in fields_of(response)
              if f.is_struct and f.is_array and route.versions[1] in f.versions]
    ops = getattr(response, "cluster_authorized_operations", None)
    assert all(not items for items in listed)
    assert ops in (None, 0, -2147483648, set())


def test_the_refusal_table_covers_every_resource_type_used():
    assert {c.resource for r in ROUTES for c in r.acls} <= set(REFUSALS)
