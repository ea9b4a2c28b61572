"""Kafka's group coordinator (`kafka.coordinator.group`): consumer groups and their offsets.

- `records`: the `__consumer_offsets` key/value formats and the group → partition rule;
- `metadata`: a group's state and members, with no I/O (the state table);
- `coordinator`: the protocol's flows (join, sync, heartbeat, leave, offsets, admin),
  timers, loading and unloading with the partition's leadership.

The broker (`praha.broker.handlers.group`) decodes the wire requests, hands them here and
gives the coordinator its log (`OffsetsLog`): appends as leader with acks=all, and reads.
"""
