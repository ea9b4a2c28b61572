"""DescribeClientQuotas (48) and AlterClientQuotas (49), as Kafka 3.9 in ZooKeeper mode.

Describe: 1. the filter's components are checked (`filter_from_wire`: a bad one fails the
whole request with Kafka's error and message); 2. every quota znode is read and filtered
(`praha.zk.quota_zk.describe_client_quotas`), off the event loop.
Alter: each entry on its own: 1. its entity (`entity_from_wire`) and operations
(`check_alteration`) are checked before anything of it is written; 2. unless
`validate_only`, the entity's config and a change notice are written, which every broker
(this one included) applies through its config change listener. An entry's error is
answered in its place (INVALID_REQUEST and Kafka's message); the others still apply.
"""
from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from praha.errors import ErrorCode, PrahaError
from praha.protocol.framing import DecodedRequest
from praha.protocol.messages.gen.admin import (
    AlterClientQuotasRequest,
    AlterClientQuotasResponse,
    DescribeClientQuotasRequest,
    DescribeClientQuotasResponse,
)
from praha.security.acl import AclOperation
from praha.zk.quota_entities import QuotaOp, entity_from_wire, filter_from_wire
from praha.zk.quota_zk import alter_client_quotas, describe_client_quotas

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker

log = logging.getLogger(__name__)

_DEntry = DescribeClientQuotasResponse.EntryData
_AEntry = AlterClientQuotasResponse.EntryData


class QuotaApis:
    def __init__(self, broker: Broker):
        self.broker = broker

    async def handle_describe_client_quotas(self, req: DecodedRequest) -> DescribeClientQuotasResponse:
        r = req.body(DescribeClientQuotasRequest)
        # Kafka: DescribeConfigs on the cluster
        if not self.broker.authz.cluster_allowed(req, AclOperation.DESCRIBE_CONFIGS):
            return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                                                error_message=None, entries=None)
        try:
            quota_filter = filter_from_wire(
                [(c.entity_type, c.match_type, c.match) for c in (r.components or [])], bool(r.strict))
            found = await asyncio.get_running_loop().run_in_executor(
                None, lambda: describe_client_quotas(self.broker.zk_store(), quota_filter))
        except PrahaError as e:
            return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=int(e.code), error_message=str(e),
                                                entries=None)
        entries = [
            _DEntry(entity=[_DEntry.EntityData(entity_type=kind, entity_name=name) for kind, name in entity.wire()],
                    values=[_DEntry.ValueData(key=k, value=v) for k, v in sorted(values.items())])
            for entity, values in sorted(found.items(), key=lambda item: item[0].entity_path)]
        return DescribeClientQuotasResponse(throttle_time_ms=0, error_code=0, error_message=None, entries=entries)

    async def handle_alter_client_quotas(self, req: DecodedRequest) -> AlterClientQuotasResponse:
        r = req.body(AlterClientQuotasRequest)
        validate_only = bool(r.validate_only)
        # Kafka: AlterConfigs on the cluster, else every entry answers CLUSTER_AUTHORIZATION_FAILED
        allowed = self.broker.authz.cluster_allowed(req, AclOperation.ALTER_CONFIGS)
        out = []
        changed = 0
        for entry in r.entries or []:
            components = [(e.entity_type, e.entity_name) for e in (entry.entity or [])]
            ops = [QuotaOp(o.key, o.value, bool(o.remove)) for o in (entry.ops or [])]
            code, message = ErrorCode.NONE, None
            if not allowed:
                out.append(_AEntry(error_code=int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED), error_message=None,
                                   entity=[_AEntry.EntityData(entity_type=k, entity_name=n) for k, n in components]))
                continue
            try:
                entity = entity_from_wire(components)
                await asyncio.get_running_loop().run_in_executor(
                    None, alter_client_quotas, self.broker.zk_store(), entity, ops, validate_only)
                changed += 1
            except PrahaError as e:
                code, message = e.code, str(e)
            out.append(_AEntry(error_code=int(code), error_message=message,
                               entity=[_AEntry.EntityData(entity_type=k, entity_name=n) for k, n in components]))
        if changed and not validate_only:
            log.info("client quotas altered for %d entities (%d refused)", changed, len(out) - changed)
        return AlterClientQuotasResponse(throttle_time_ms=0, entries=out)
