"""The ZooKeeper-mode controller: one per cluster, elected through /controller.

Files, one responsibility each (as Kafka's `kafka.controller` package):
  events.py                  the events the controller reacts to
  event_manager.py           one queue, one thread; all controller state is touched there
  context.py                 what the controller knows (no I/O)
  election.py                the four leader-election algorithms (pure)
  partition_state_machine.py / replica_state_machine.py   states, valid-previous tables, actions
  request_batch.py           gathers one LeaderAndIsr/UpdateMetadata/StopReplica per broker per event
  channel_manager.py         a queue and a sender thread per live broker
  store_api.py               what the controller asks of ZooKeeper (typed protocols; ZkStore implements them)
  services.py                the bundle the flows get instead of the Controller
  context_loader.py          the failover's read of the context from ZooKeeper
  topic_watches.py           watches on /brokers/topics/<t> (partition expansion)
  flows.py                   the flows of docs/controller.md §8: brokers, topics, ISR changes, controlled shutdown
  topic_deletion.py / reassignment.py / leader_balance.py   the managers built on the state machines
  controller.py              the seat: election, session, failover, resignation
"""
