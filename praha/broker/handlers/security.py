"""The security admin APIs: CreateAcls, DescribeAcls, DeleteAcls (Kafka's AclAuthorizer
in ZooKeeper mode: any broker writes the ACL znodes and change notices) and
DescribeUserScramCredentials, AlterUserScramCredentials (`/config/users/<user>`).

Each: 1. the authority check (ACL APIs: Alter/Describe on the cluster; SCRAM: Alter/
Describe on the cluster); 2. every entry checked before anything is written (a bad entry
gets its own error, the others go ahead, as Kafka); 3. the ZooKeeper work off the event
loop. The ACL APIs answer SECURITY_DISABLED when no authoriser is configured.
"""
from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from enum import IntEnum
from typing import TYPE_CHECKING, TypeVar

from praha.errors import ErrorCode, PrahaError
from praha.protocol.error_response import refusal
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.admin import (
    AlterUserScramCredentialsRequest,
    AlterUserScramCredentialsResponse,
    CreateAclsRequest,
    CreateAclsResponse,
    DeleteAclsRequest,
    DeleteAclsResponse,
    DescribeAclsRequest,
    DescribeAclsResponse,
    DescribeUserScramCredentialsRequest,
    DescribeUserScramCredentialsResponse,
)
from praha.protocol.messages.runtime import WireMessage
from praha.protocol.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, ScramMechanism
from praha.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclFilter,
    AclOperation,
    PatternType,
    PermissionType,
    ResourcePattern,
    ResourceType,
)
from praha.security.acl_store import add_acls, load_all, remove_acls
from praha.security.credentials import alter_credentials, read_credentials, scram_users

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker

T = TypeVar("T")
_E = TypeVar("_E", bound=IntEnum)
_DISABLED = "No Authorizer is configured on the broker"


class SecurityApis:
    def __init__(self, broker: Broker):
        self.broker = broker

    async def _zk(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(None, fn)

    def _cluster(self, req: DecodedRequest, op: AclOperation) -> bool:
        return self.broker.authz.cluster_allowed(req, op)

    # ------------------------------------------------------------------ ACLs
    async def handle_create_acls(self, req: DecodedRequest) -> WireMessage:
        creations = req.body(CreateAclsRequest).creations or []
        R_ = CreateAclsResponse.AclCreationResult

        def result(code: ErrorCode, message: str | None = None) -> CreateAclsResponse.AclCreationResult:
            return R_(error_code=int(code), error_message=message)

        if not self.broker.authz.enabled:
            return refusal(req, ErrorCode.SECURITY_DISABLED, _DISABLED)
        if not self._cluster(req, AclOperation.ALTER):
            return refusal(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        store = self.broker.zk_store()
        results = []
        for c in creations:
            try:
                binding = _binding(c.resource_type, c.resource_name, c.resource_pattern_type, c.principal, c.host,
                                   c.operation, c.permission_type)
                await self._zk(functools.partial(add_acls, store, binding.pattern, [binding.entry]))
                results.append(result(ErrorCode.NONE))
            except PrahaError as e:
                results.append(result(e.code, str(e)))
        return CreateAclsResponse(throttle_time_ms=0, results=results)

    async def handle_describe_acls(self, req: DecodedRequest) -> WireMessage:
        r = req.body(DescribeAclsRequest)

        def refused(code: ErrorCode, message: str | None = None) -> WireMessage:
            return refusal(req, code, message)

        if not self.broker.authz.enabled:
            return refused(ErrorCode.SECURITY_DISABLED, _DISABLED)
        if not self._cluster(req, AclOperation.DESCRIBE):
            return refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        try:
            f = _filter(r.resource_type_filter, r.resource_name_filter, r.pattern_type_filter, r.principal_filter,
                        r.host_filter, r.operation, r.permission_type)
        except PrahaError as e:
            return refused(e.code, str(e))
        store = self.broker.zk_store()
        bindings = [b for b in await self._zk(lambda: load_all(store)) if f.matches(b)]
        by_pattern: dict[ResourcePattern, list[AccessControlEntry]] = {}
        for b in bindings:
            by_pattern.setdefault(b.pattern, []).append(b.entry)
        Res = DescribeAclsResponse.DescribeAclsResource
        return DescribeAclsResponse(throttle_time_ms=0, error_code=0, error_message=None, resources=[
            Res(resource_type=int(p.type), resource_name=p.name, pattern_type=int(p.pattern_type), acls=[
                Res.AclDescription(principal=e.principal, host=e.host, operation=int(e.operation),
                                   permission_type=int(e.permission)) for e in entries])
            for p, entries in by_pattern.items()])

    async def handle_delete_acls(self, req: DecodedRequest) -> WireMessage:
        filters = req.body(DeleteAclsRequest).filters or []
        FR = DeleteAclsResponse.DeleteAclsFilterResult

        def refused(code: ErrorCode, message: str | None = None) -> WireMessage:
            return refusal(req, code, message)

        if not self.broker.authz.enabled:
            return refused(ErrorCode.SECURITY_DISABLED, _DISABLED)
        if not self._cluster(req, AclOperation.ALTER):
            return refused(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        store = self.broker.zk_store()
        out = []
        for flt in filters:
            try:
                f = _filter(flt.resource_type_filter, flt.resource_name_filter, flt.pattern_type_filter,
                            flt.principal_filter, flt.host_filter, flt.operation, flt.permission_type)
                removed = await self._zk(functools.partial(remove_acls, store, f))
            except PrahaError as e:
                out.append(FR(error_code=int(e.code), error_message=str(e), matching_acls=[]))
                continue
            out.append(FR(error_code=0, error_message=None, matching_acls=[
                FR.DeleteAclsMatchingAcl(error_code=0, error_message=None, resource_type=int(b.pattern.type),
                                         resource_name=b.pattern.name, pattern_type=int(b.pattern.pattern_type),
                                         principal=b.entry.principal, host=b.entry.host,
                                         operation=int(b.entry.operation), permission_type=int(b.entry.permission))
                for b in removed]))
        return DeleteAclsResponse(throttle_time_ms=0, filter_results=out)

    # ------------------------------------------------------------------ SCRAM credentials
    async def handle_describe_user_scram_credentials(self, req: DecodedRequest) -> WireMessage:
        Result = DescribeUserScramCredentialsResponse.DescribeUserScramCredentialsResult
        if not self._cluster(req, AclOperation.DESCRIBE):
            return refusal(req, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        store = self.broker.zk_store()
        # null or empty: every user, as Kafka (librdkafka sends an empty list for "all")
        users = req.body(DescribeUserScramCredentialsRequest).users
        asked = [u.name for u in users] if users else None
        if asked is None:
            found = await self._zk(lambda: scram_users(store))
        else:
            found = {u: await self._zk(functools.partial(read_credentials, store, u)) for u in dict.fromkeys(asked)}
        results = []
        for user, creds in found.items():
            if not creds:
                results.append(Result(user=user, error_code=ErrorCode.RESOURCE_NOT_FOUND,
                                      error_message="Attempt to describe a user credential that does not "
                                                    f"exist: {user}",
                                      credential_infos=[]))
                continue
            results.append(Result(user=user, error_code=0, error_message=None, credential_infos=[
                Result.CredentialInfo(mechanism=m.wire_id, iterations=c.iterations) for m, c in creds.items()]))
        return DescribeUserScramCredentialsResponse(throttle_time_ms=0, error_code=0, error_message=None,
                                                    results=results)

    async def handle_alter_user_scram_credentials(self, req: DecodedRequest) -> AlterUserScramCredentialsResponse:
        r = req.body(AlterUserScramCredentialsRequest)
        Result = AlterUserScramCredentialsResponse.AlterUserScramCredentialsResult
        users = list(dict.fromkeys([d.name for d in r.deletions or []] + [u.name for u in r.upsertions or []]))
        if not self._cluster(req, AclOperation.ALTER):
            return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=[
                Result(user=u, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, error_message=None) for u in users])
        store = self.broker.zk_store()
        results = []
        for user in users:
            try:
                deletions = [_mechanism(d.mechanism) for d in r.deletions or [] if d.name == user]
                upserts = {}
                for u in (u for u in r.upsertions or [] if u.name == user):
                    mechanism = _mechanism(u.mechanism)
                    if not MIN_ITERATIONS <= u.iterations <= MAX_ITERATIONS:
                        raise PrahaError(f"Iterations {u.iterations} must be between {MIN_ITERATIONS} and "
                                         f"{MAX_ITERATIONS}", ErrorCode.UNACCEPTABLE_CREDENTIAL)
                    upserts[mechanism] = ScramCredential.from_salted_password(
                        mechanism, bytes(u.salted_password), bytes(u.salt), u.iterations)
                if not user:
                    raise PrahaError("Username must not be empty", ErrorCode.UNACCEPTABLE_CREDENTIAL)
                if set(deletions) & set(upserts):
                    raise PrahaError("A user credential cannot be altered twice in the same request",
                                     ErrorCode.DUPLICATE_RESOURCE)
                await self._zk(functools.partial(alter_credentials, store, user, upserts, deletions))
                results.append(Result(user=user, error_code=0, error_message=None))
            except PrahaError as e:
                results.append(Result(user=user, error_code=int(e.code), error_message=str(e)))
        return AlterUserScramCredentialsResponse(throttle_time_ms=0, results=results)


def _mechanism(wire_id: int) -> ScramMechanism:
    m = ScramMechanism.by_wire_id(wire_id)
    if m is None:
        raise PrahaError(f"Unknown SCRAM mechanism {wire_id}", ErrorCode.UNSUPPORTED_SASL_MECHANISM)
    return m


def _enum(cls: type[_E], value: int, what: str) -> _E:
    try:
        return cls(value)
    except ValueError:
        raise PrahaError(f"unknown {what} {value}", ErrorCode.INVALID_REQUEST) from None


def _binding(rtype: int, name: str, pattern: int, principal: str, host: str, op: int, perm: int) -> AclBinding:
    """A CreateAcls entry, checked as Kafka checks it (INVALID_REQUEST otherwise)."""
    resource_type = _enum(ResourceType, rtype, "resource type")
    pattern_type = _enum(PatternType, pattern, "pattern type")
    operation, permission = _enum(AclOperation, op, "operation"), _enum(PermissionType, perm, "permission type")
    if resource_type in (ResourceType.ANY, ResourceType.UNKNOWN) or pattern_type not in (PatternType.LITERAL,
                                                                                         PatternType.PREFIXED):
        raise PrahaError("resource type and pattern type must be concrete", ErrorCode.INVALID_REQUEST)
    if operation in (AclOperation.ANY, AclOperation.UNKNOWN) or permission not in (PermissionType.ALLOW,
                                                                                   PermissionType.DENY):
        raise PrahaError("operation and permission type must be concrete", ErrorCode.INVALID_REQUEST)
    if not name or ":" not in (principal or "") or not host:
        raise PrahaError("resource name, principal (Type:name) and host are required", ErrorCode.INVALID_REQUEST)
    if resource_type == ResourceType.CLUSTER and name != "kafka-cluster":
        raise PrahaError("the cluster resource is named kafka-cluster", ErrorCode.INVALID_REQUEST)
    return AclBinding(ResourcePattern(resource_type, name, pattern_type),
                      AccessControlEntry(principal, host, operation, permission))


def _filter(rtype: int, name: str | None, pattern: int, principal: str | None, host: str | None, op: int,
            perm: int) -> AclFilter:
    return AclFilter(_enum(ResourceType, rtype, "resource type"), name, _enum(PatternType, pattern, "pattern type"),
                     principal, host, _enum(AclOperation, op, "operation"),
                     _enum(PermissionType, perm, "permission type"))
