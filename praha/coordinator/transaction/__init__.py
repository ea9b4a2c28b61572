"""Kafka's transaction coordinator (`kafka.coordinator.transaction`): transactional ids,
their producer ids and epochs, and the two-phase end of a transaction.

- `records`: the `__transaction_state` key/value formats and the id → partition rule;
- `metadata`: a transactional id's state and the table of legal transitions (no I/O);
- `markers`: the channel that writes COMMIT/ABORT markers to partition leaders
  (WriteTxnMarkers, batched per broker, retried until written);
- `coordinator`: the flows (InitProducerId, AddPartitionsToTxn, EndTxn, timeouts,
  expiration), loading and unloading with the partition's leadership.

The broker (`praha.broker.handlers.txn`) decodes the wire requests, hands them here and
gives the coordinator its log (`TxnStateLog`: appends as leader with acks=all, and reads).
Transactional offset commits live with the group coordinator (`praha.coordinator.group`).
"""
