"""Valid request frames shared by the protocol tests (interop, fuzz); a plain module,
not a conftest, so its name cannot clash with other test directories."""
from __future__ import annotations

from kafka.protocol.admin import CreateTopicsRequest, DeleteTopicsRequest
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
from kafka.protocol.metadata import ApiVersionsRequest, FindCoordinatorRequest, MetadataRequest
from kafka.protocol.producer import ProduceRequest
from kafka.record import MemoryRecordsBuilder
from kafka_python_controller_apis import (
    ControlledShutdownRequest,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)


def record_batch(n: int = 3) -> bytes:
    """A real v2 record batch, as kafka-python's producer builds it."""
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20)
    for i in range(n):
        builder.append(timestamp=1700000000000 + i, key=b"k%d" % i, value=b"value-%d" % i, headers=[])
    builder.close()
    return bytes(builder.buffer())


def kafka_python_frame(request, version: int, correlation_id: int = 1, client_id: str = "kafka-python") -> bytes:
    """Exactly what kafka-python's client writes on the socket (see kafka/protocol/parser.py)."""
    request.API_VERSION = version
    request.with_header(correlation_id=correlation_id, client_id=client_id)
    return bytes(request.encode(header=True, framed=True))


def client_requests():
    """(name, request, version): the requests unmodified clients send to praha."""
    P = ProduceRequest
    F = FetchRequest
    L = ListOffsetsRequest
    C = CreateTopicsRequest
    return [
        ("ApiVersions v3", ApiVersionsRequest(client_software_name="kafka-python",
                                              client_software_version="3.0.12"), 3),
        ("Metadata v12", MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="orders")],
                                         allow_auto_topic_creation=True,
                                         include_topic_authorized_operations=False), 12),
        ("Metadata v12 all", MetadataRequest(topics=None, allow_auto_topic_creation=False), 12),
        ("Produce v9", P(transactional_id=None, acks=-1, timeout_ms=30000, topic_data=[
            P.TopicProduceData(name="orders", partition_data=[
                P.TopicProduceData.PartitionProduceData(index=0, records=record_batch())])]), 9),
        ("Fetch v12", F(replica_id=-1, max_wait_ms=500, min_bytes=1, max_bytes=52428800,
                        isolation_level=0, session_id=0, session_epoch=-1, topics=[
                            F.FetchTopic(topic="orders", partitions=[
                                F.FetchTopic.FetchPartition(partition=0, current_leader_epoch=-1,
                                                            fetch_offset=42, last_fetched_epoch=-1,
                                                            log_start_offset=-1,
                                                            partition_max_bytes=1048576)])],
                        forgotten_topics_data=[], rack_id=""), 12),
        ("ListOffsets v7", L(replica_id=-1, isolation_level=0, topics=[
            L.ListOffsetsTopic(name="orders", partitions=[
                L.ListOffsetsTopic.ListOffsetsPartition(partition_index=0, current_leader_epoch=-1,
                                                        timestamp=-1)])]), 7),
        ("CreateTopics v5", C(topics=[C.CreatableTopic(name="new", num_partitions=3, replication_factor=2,
                                                        assignments=[], configs=[])],
                              timeout_ms=1000, validate_only=False), 5),
        ("DeleteTopics v4", DeleteTopicsRequest(topic_names=["old"], timeout_ms=1000), 4),
        ("FindCoordinator v3", FindCoordinatorRequest(key="g", key_type=0), 3),
    ]


def controller_requests():
    R = LeaderAndIsrRequest
    U = UpdateMetadataRequest
    S = StopReplicaRequest
    return [
        ("LeaderAndIsr v4", R(controller_id=1, controller_epoch=2, broker_epoch=3, topic_states=[
            R.LeaderAndIsrTopicState(topic_name="t", partition_states=[
                R.LeaderAndIsrTopicState.LeaderAndIsrPartitionState(
                    partition_index=p, controller_epoch=2, leader=1, leader_epoch=0, isr=[1, 2],
                    partition_epoch=0, replicas=[1, 2], adding_replicas=[], removing_replicas=[],
                    is_new=True) for p in range(3)])],
            live_leaders=[R.LeaderAndIsrLiveLeader(broker_id=1, host_name="127.0.0.1", port=9092)]), 4),
        ("UpdateMetadata v6", U(controller_id=1, controller_epoch=2, broker_epoch=3, topic_states=[
            U.UpdateMetadataTopicState(topic_name="t", partition_states=[
                U.UpdateMetadataTopicState.UpdateMetadataPartitionState(
                    partition_index=0, controller_epoch=2, leader=1, leader_epoch=0, isr=[1],
                    zk_version=0, replicas=[1], offline_replicas=[])])],
            live_brokers=[U.UpdateMetadataBroker(id=1, endpoints=[
                U.UpdateMetadataBroker.UpdateMetadataEndpoint(port=9092, host="127.0.0.1",
                                                              listener="PLAINTEXT", security_protocol=0)],
                rack=None)]), 6),
        ("StopReplica v3", S(controller_id=1, controller_epoch=2, broker_epoch=3, topic_states=[
            S.StopReplicaTopicState(topic_name="t", partition_states=[
                S.StopReplicaTopicState.StopReplicaPartitionState(partition_index=0, leader_epoch=-2,
                                                                  delete_partition=True)])]), 3),
        ("ControlledShutdown v3", ControlledShutdownRequest(broker_id=1, broker_epoch=3), 3),
    ]


def valid_bodies() -> list[bytes]:
    """Frame bodies (size prefix stripped) of every sample request."""
    return [kafka_python_frame(r, v, correlation_id=i)[4:]
            for i, (_, r, v) in enumerate(client_requests() + controller_requests())]
