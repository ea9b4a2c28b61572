"""The rest of Kafka's `Admin` over the wire, for Kafka's command-line tools by name
(`praha/cli/kafka_tools/`): topics (Metadata, CreateTopics, DeleteTopics,
CreatePartitions), configs (IncrementalAlterConfigs), ACLs (Create/Describe/DeleteAcls)
and reassignments (List/AlterPartitionReassignments).

It is `GroupAdmin`'s plumbing (bootstrap brokers tried in turn, versions from each
broker's ApiVersions, TLS/SASL from a `ClientSecurity`). Requests Kafka's admin sends to
the controller go to the broker Metadata names controller, again after NOT_CONTROLLER
(`controller_api.call_controller`). A refusal raises `PrahaError` with Kafka's code and
the broker's message (Kafka's text where the broker gave none).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from praha.admin.controller_api import Locator, call_controller
from praha.admin.groups import GroupAdmin, error_message
from praha.common import TopicPartition, by_topic, partitions_by_topic
from praha.errors import ErrorCode, PrahaError
from praha.protocol.api_keys import ApiKey
from praha.protocol.messages.gen.admin import (
    AlterClientQuotasRequest,
    AlterPartitionReassignmentsRequest,
    AlterUserScramCredentialsRequest,
    CreateAclsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteAclsRequest,
    DeleteTopicsRequest,
    DescribeAclsRequest,
    DescribeClientQuotasRequest,
    DescribeUserScramCredentialsRequest,
    IncrementalAlterConfigsRequest,
    ListPartitionReassignmentsRequest,
)
from praha.protocol.messages.gen.metadata import MetadataRequest


def kafka_error(code: int, message: str | None) -> PrahaError:
    """A refusal as Kafka's admin reports it: the broker's message, else Kafka's own text."""
    try:
        known: ErrorCode | None = ErrorCode(code)
    except ValueError:
        known = None
    return PrahaError(message or error_message(code), code=known)


@dataclass(frozen=True)
class Reassignment:
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True)
class AclRow:
    """One ACL as the wire carries it (praha.security.acl's enums' values)."""

    resource_type: int
    name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int


class ClusterAdmin(GroupAdmin):
    """Topic, config, ACL and reassignment operations against any cluster."""

    def __enter__(self) -> ClusterAdmin:
        return self

    # -- metadata --------------------------------------------------------------------------
    def metadata(self, topics: Iterable[str] | None = None) -> Any:
        """A Metadata answer (v1+: controller id, v10+: topic ids) for `topics` (None: all)."""
        wanted = None if topics is None else list(dict.fromkeys(topics))

        def build(v: int) -> Any:
            return MetadataRequest(topics=None if wanted is None else [
                MetadataRequest.MetadataRequestTopic(name=t, topic_id=None) for t in wanted],
                allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                include_topic_authorized_operations=False)

        return self._any_broker(lambda h, p: self._send(h, p, ApiKey.METADATA, build))

    def controller_locator(self) -> Locator:
        def locate() -> tuple[str, int]:
            md = self.metadata(())
            for b in md.brokers:
                if b.node_id == md.controller_id:
                    return b.host, b.port
            raise PrahaError("the cluster names no live controller", code=ErrorCode.NOT_CONTROLLER)

        return locate

    def _to_controller(self, request: Any, not_controller: Any) -> Any:
        response, _ = call_controller(self.controller_locator(), request, not_controller,
                                      timeout=self.timeout * 3, security=self.security)
        return response

    # -- topics ----------------------------------------------------------------------------
    def create_topic(self, name: str, partitions: int, replication_factor: int,
                     assignment: Mapping[int, Sequence[int]] | None, configs: Mapping[str, str]) -> None:
        T = CreateTopicsRequest.CreatableTopic
        topic = T(name=name, num_partitions=-1 if assignment else partitions,
                  replication_factor=-1 if assignment else replication_factor,
                  assignments=[T.CreatableReplicaAssignment(partition_index=p, broker_ids=list(r))
                               for p, r in sorted((assignment or {}).items())],
                  configs=[T.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()])
        request = CreateTopicsRequest(topics=[topic], timeout_ms=int(self.timeout * 1000), validate_only=False)
        response = self._to_controller(request, lambda r: any(t.error_code == ErrorCode.NOT_CONTROLLER
                                                              for t in r.topics))
        for t in response.topics:
            if t.error_code:
                raise kafka_error(t.error_code, t.error_message)

    def delete_topics(self, names: Sequence[str]) -> None:
        request = DeleteTopicsRequest(topic_names=list(names), topics=[
            DeleteTopicsRequest.DeleteTopicState(name=n, topic_id=None) for n in names],
            timeout_ms=int(self.timeout * 1000))
        response = self._to_controller(request, lambda r: any(t.error_code == ErrorCode.NOT_CONTROLLER
                                                              for t in r.responses))
        for t in response.responses:
            if t.error_code:
                raise kafka_error(t.error_code, getattr(t, "error_message", None))

    def create_partitions(self, name: str, count: int, new_assignment: Sequence[Sequence[int]] | None) -> None:
        P = CreatePartitionsRequest.CreatePartitionsTopic
        request = CreatePartitionsRequest(topics=[P(name=name, count=count, assignments=None if not new_assignment
                                                    else [P.CreatePartitionsAssignment(broker_ids=list(r))
                                                          for r in new_assignment])],
                                          timeout_ms=int(self.timeout * 1000), validate_only=False)
        response = self._to_controller(request, lambda r: any(t.error_code == ErrorCode.NOT_CONTROLLER
                                                              for t in r.results))
        for t in response.results:
            if t.error_code:
                raise kafka_error(t.error_code, t.error_message)

    # -- configs ---------------------------------------------------------------------------
    def alter_configs(self, resource_type: int, name: str, ops: Sequence[tuple[str, int, str | None]],
                      broker: tuple[str, int] | None = None) -> None:
        """IncrementalAlterConfigs: ops are (key, operation 0 set / 1 delete, value); a
        broker's own configs go to that broker, as Kafka's admin sends them."""
        R = IncrementalAlterConfigsRequest.AlterConfigsResource
        request = IncrementalAlterConfigsRequest(resources=[R(
            resource_type=resource_type, resource_name=name,
            configs=[R.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops])],
            validate_only=False)

        def send(host: str, port: int) -> Any:
            return self._send(host, port, ApiKey.INCREMENTAL_ALTER_CONFIGS, lambda v: request)

        response = send(*broker) if broker else self._any_broker(send)
        for r in response.responses:
            if r.error_code:
                raise kafka_error(r.error_code, r.error_message)

    # -- client quotas and SCRAM credentials (kafka-configs --entity-type users|clients|ips) ----
    def describe_client_quotas(self, components: Sequence[tuple[str, int, str | None]], strict: bool
                               ) -> list[tuple[tuple[tuple[str, str | None], ...], dict[str, float]]]:
        """DescribeClientQuotas: [(entity ((type, name or None for the default), ...), {key: value})]."""
        C = DescribeClientQuotasRequest.ComponentData
        request = DescribeClientQuotasRequest(components=[C(entity_type=t, match_type=m, match=n)
                                                          for t, m, n in components], strict=strict)
        response = self._any_broker(lambda h, p: self._send(h, p, ApiKey.DESCRIBE_CLIENT_QUOTAS, lambda v: request))
        if response.error_code:
            raise kafka_error(response.error_code, response.error_message)
        return [(tuple((e.entity_type, e.entity_name) for e in entry.entity), {v.key: v.value for v in entry.values})
                for entry in response.entries or []]

    def alter_client_quotas(self, entity: Sequence[tuple[str, str | None]], ops: Sequence[tuple[str, float | None]]
                            ) -> None:
        """AlterClientQuotas of one entity: ops (key, value; None removes the key)."""
        E = AlterClientQuotasRequest.EntryData
        request = AlterClientQuotasRequest(validate_only=False, entries=[E(
            entity=[E.EntityData(entity_type=t, entity_name=n) for t, n in entity],
            ops=[E.OpData(key=k, value=0.0 if v is None else v, remove=v is None) for k, v in ops])])
        response = self._any_broker(lambda h, p: self._send(h, p, ApiKey.ALTER_CLIENT_QUOTAS, lambda v: request))
        for r in response.entries:
            if r.error_code:
                raise kafka_error(r.error_code, r.error_message)

    def describe_scram(self, users: Sequence[str]) -> list[tuple[str, int, str | None, list[tuple[int, int]]]]:
        """DescribeUserScramCredentials of `users` (none: all): [(user, error code, message,
        [(mechanism wire id, iterations)])]."""
        U = DescribeUserScramCredentialsRequest.UserName
        request = DescribeUserScramCredentialsRequest(users=[U(name=u) for u in users] or None)
        response = self._any_broker(
            lambda h, p: self._send(h, p, ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, lambda v: request))
        if response.error_code:
            raise kafka_error(response.error_code, response.error_message)
        return [(r.user, r.error_code, r.error_message, [(c.mechanism, c.iterations) for c in r.credential_infos])
                for r in response.results]

    def alter_scram(self, upserts: Sequence[tuple[str, int, int, bytes, bytes]],
                    deletions: Sequence[tuple[str, int]]) -> None:
        """AlterUserScramCredentials: upserts (user, mechanism, iterations, salt, salted
        password), deletions (user, mechanism); sent to the controller, as Kafka's admin does."""
        R = AlterUserScramCredentialsRequest
        request = R(deletions=[R.ScramCredentialDeletion(name=u, mechanism=m) for u, m in deletions],
                    upsertions=[R.ScramCredentialUpsertion(name=u, mechanism=m, iterations=i, salt=salt,
                                                           salted_password=salted)
                                for u, m, i, salt, salted in upserts])
        response = self._any_broker(
            lambda h, p: self._send(h, p, ApiKey.ALTER_USER_SCRAM_CREDENTIALS, lambda v: request))
        for r in response.results:
            if r.error_code:
                raise kafka_error(r.error_code, r.error_message)

    # -- ACLs ------------------------------------------------------------------------------
    def create_acls(self, rows: Sequence[AclRow]) -> None:
        C = CreateAclsRequest.AclCreation
        request = CreateAclsRequest(creations=[C(resource_type=a.resource_type, resource_name=a.name,
                                                 resource_pattern_type=a.pattern_type, principal=a.principal,
                                                 host=a.host, operation=a.operation, permission_type=a.permission)
                                               for a in rows])
        response = self._any_broker(lambda h, p: self._send(h, p, ApiKey.CREATE_ACLS, lambda v: request))
        for r in response.results:
            if r.error_code:
                raise kafka_error(r.error_code, r.error_message)

    def describe_acls(self, f: AclRow) -> list[AclRow]:
        """The ACLs matching a filter (name/principal/host "" = any)."""
        request = DescribeAclsRequest(resource_type_filter=f.resource_type, resource_name_filter=f.name or None,
                                      pattern_type_filter=f.pattern_type, principal_filter=f.principal or None,
                                      host_filter=f.host or None, operation=f.operation, permission_type=f.permission)
        response = self._any_broker(lambda h, p: self._send(h, p, ApiKey.DESCRIBE_ACLS, lambda v: request))
        if response.error_code:
            raise kafka_error(response.error_code, response.error_message)
        return [AclRow(r.resource_type, r.resource_name, r.pattern_type, a.principal, a.host, a.operation,
                       a.permission_type) for r in response.resources for a in r.acls]

    def delete_acls(self, filters: Sequence[AclRow]) -> list[AclRow]:
        F = DeleteAclsRequest.DeleteAclsFilter
        request = DeleteAclsRequest(filters=[F(resource_type_filter=f.resource_type,
                                               resource_name_filter=f.name or None,
                                               pattern_type_filter=f.pattern_type,
                                               principal_filter=f.principal or None, host_filter=f.host or None,
                                               operation=f.operation, permission_type=f.permission)
                                             for f in filters])
        response = self._any_broker(lambda h, p: self._send(h, p, ApiKey.DELETE_ACLS, lambda v: request))
        removed: list[AclRow] = []
        for r in response.filter_results:
            if r.error_code:
                raise kafka_error(r.error_code, r.error_message)
            removed += [AclRow(m.resource_type, m.resource_name, m.pattern_type, m.principal, m.host, m.operation,
                               m.permission_type) for m in r.matching_acls if not m.error_code]
        return removed

    # -- reassignments ---------------------------------------------------------------------
    def list_reassignments(self, tps: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, Reassignment]:
        topics = None
        if tps is not None:
            topics = [ListPartitionReassignmentsRequest.ListPartitionReassignmentsTopics(name=t, partition_indexes=ps)
                      for t, ps in partitions_by_topic(sorted(tps)).items()]
        request = ListPartitionReassignmentsRequest(timeout_ms=int(self.timeout * 1000), topics=topics)
        response = self._to_controller(request, lambda r: r.error_code == ErrorCode.NOT_CONTROLLER)
        if response.error_code:
            raise kafka_error(response.error_code, response.error_message)
        return {TopicPartition(t.name, p.partition_index): Reassignment(tuple(p.replicas), tuple(p.adding_replicas),
                                                                        tuple(p.removing_replicas))
                for t in response.topics for p in t.partitions}

    def alter_reassignments(self, plan: Mapping[TopicPartition, Sequence[int]]) -> dict[TopicPartition, PrahaError]:
        """Start moving each partition to its replicas; the partitions refused, with why."""
        R = AlterPartitionReassignmentsRequest.ReassignableTopic
        moves = by_topic((tp.topic, R.ReassignablePartition(partition_index=tp.partition, replicas=list(plan[tp])))
                         for tp in sorted(plan))
        request = AlterPartitionReassignmentsRequest(timeout_ms=int(self.timeout * 1000),
                                                     allow_replication_factor_change=True,
                                                     topics=[R(name=t, partitions=ps) for t, ps in moves.items()])
        response = self._to_controller(request, lambda r: r.error_code == ErrorCode.NOT_CONTROLLER)
        if response.error_code:
            raise kafka_error(response.error_code, response.error_message)
        return {TopicPartition(t.name, p.partition_index): kafka_error(p.error_code, p.error_message)
                for t in response.responses for p in t.partitions if p.error_code}
