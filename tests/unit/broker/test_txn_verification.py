"""KIP-890's pure parts on the leader: which produce needs verifying (the first batch's
header), the broker-to-broker AddPartitionsToTxn v4 request it sends, and how the
coordinator's answer becomes the produce's error (Kafka 3.8+'s translation)."""
from __future__ import annotations

from kafka.protocol.producer.transaction import AddPartitionsToTxnRequest, AddPartitionsToTxnResponse
from kafka.record.default_records import DefaultRecordBatchBuilder

from praha.broker.handlers.txn_verification import (
    TxnProducer,
    is_transactional,
    partition_errors,
    produce_error,
    transactional_producer,
    verification_request,
)
from praha.common import TopicPartition as TP
from praha.errors import ErrorCode

R = AddPartitionsToTxnResponse


def batch(transactional: bool, pid: int = 7, epoch: int = 3) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=int(transactional), producer_id=pid,
                                  producer_epoch=epoch, base_sequence=0, batch_size=1 << 20)
    b.append(0, timestamp=1, key=None, value=b"v", headers=[])
    return bytes(b.build())


def test_only_transactional_batches_need_verifying():
    assert transactional_producer(batch(True)) == TxnProducer(7, 3)
    assert transactional_producer(memoryview(batch(True))) == TxnProducer(7, 3)
    assert transactional_producer(batch(False)) is None
    assert transactional_producer(b"short") is None
    assert is_transactional(batch(True))
    assert not is_transactional(batch(False))
    assert not is_transactional(None)


def test_request_is_the_broker_batch_form_with_verify_only():
    req = verification_request("tx", 7, 3, [TP("a", 0), TP("b", 2), TP("a", 1)])
    back = AddPartitionsToTxnRequest.decode(req.encode(version=4), version=4)
    (t,) = back.transactions
    assert (t.transactional_id, t.producer_id, t.producer_epoch, t.verify_only) == ("tx", 7, 3, True)
    assert {x.name: list(x.partitions) for x in t.topics} == {"a": [0, 1], "b": [2]}


def test_answers_become_kafkas_produce_errors():
    assert produce_error(ErrorCode.NONE) == 0
    for retriable in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR,
                      ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.CONCURRENT_TRANSACTIONS):
        assert produce_error(retriable) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert produce_error(ErrorCode.PRODUCER_FENCED) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert produce_error(ErrorCode.INVALID_TXN_STATE) == ErrorCode.INVALID_TXN_STATE
    tps = [TP("a", 0), TP("a", 1)]
    resp = R(throttle_time_ms=0, error_code=0, results_by_transaction=[R.AddPartitionsToTxnResult(
        transactional_id="tx", topic_results=[R.AddPartitionsToTxnTopicResult(name="a", results_by_partition=[
            R.AddPartitionsToTxnTopicResult.AddPartitionsToTxnPartitionResult(partition_index=0,
                                                                              partition_error_code=0)])])])
    # partition 1 was not answered for: not verified
    assert partition_errors(resp, "tx", tps) == {TP("a", 0): 0, TP("a", 1): ErrorCode.INVALID_TXN_STATE}
    top = R(throttle_time_ms=0, error_code=31, results_by_transaction=[])  # CLUSTER_AUTHORIZATION_FAILED
    assert partition_errors(top, "tx", tps) == {tp: ErrorCode.INVALID_TXN_STATE for tp in tps}


def test_seed_201_a_coordinator_that_cannot_be_reached_is_a_retriable_produce_error():
    """Chaos seed 201 (`--netns --brokers 5 --faults 40 --workload txn`): a leader's verification
    call found the transaction coordinator's broker just killed, and the produce was answered
    NETWORK_EXCEPTION, which librdkafka turns into an aborted transaction; Kafka 3.8+ answers
    NOT_ENOUGH_REPLICAS (KAFKA-16386), which every client retries. Here the coordinator's port
    refuses connections: a real failed connect, the produce error is the retriable one."""
    import asyncio
    import socket
    from types import SimpleNamespace

    from praha.broker.handlers.txn_verification import TxnVerifier
    from praha.common import BrokerInfo, EndPoint
    from praha.protocol.client_security import PLAINTEXT

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    coordinator = BrokerInfo(3, (EndPoint("127.0.0.1", port, "PLAINTEXT", "PLAINTEXT"),))
    broker = SimpleNamespace(
        broker_id=1, config=SimpleNamespace(transaction_state_log_num_partitions=10),
        metadata_cache=SimpleNamespace(leader_of=lambda _tp: coordinator, topic_partitions=lambda _t: []),
        replica_manager=SimpleNamespace(inter_broker_security=PLAINTEXT))
    verifier = TxnVerifier(broker)  # type: ignore[arg-type]
    try:
        codes = asyncio.run(verifier.verify("chaos-txn-p1", 1001, 0, [TP("chaos-txn-1", 2)]))
    finally:
        verifier.close()
    assert codes == {TP("chaos-txn-1", 2): ErrorCode.NOT_ENOUGH_REPLICAS}
    assert produce_error(ErrorCode.NETWORK_EXCEPTION) == ErrorCode.NOT_ENOUGH_REPLICAS
