"""The ZooKeeper-mode controller: one per cluster, elected through /controller.

Files, one responsibility each (as Kafka's `kafka.controller` package):
  events.py                  the events the controller reacts to
  event_manager.py           one queue, one thread; all controller state is touched there
  context.py                 what the controller knows (no I/O)
  election.py                the four leader-election algorithms (pure)
  partition_state_machine.py / replica_state_machine.py   states, valid-previous tables, actions
  request_batch.py           gathers one LeaderAndIsr/UpdateMetadata/StopReplica per broker per event
  channel_manager.py         a queue and a sender thread per live broker
  controller.py              ties it together: election, failover, the flows of SPEC §8
"""
