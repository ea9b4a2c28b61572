"""Kafka 4's consumer group protocol (KIP-848), as pure decisions the coordinator applies.

- `model`: the group and its members, the state rules (no I/O);
- `records`: the group's `__consumer_offsets` records (key versions 3-8 and 16);
- `replay`: records -> state, the one way state changes (live and on load);
- `assignors`: the server-side `uniform` and `range` assignors, sticky;
- `reconcile`: a member's step towards its target, revoking before assigning;
- `subscription`: topic names and RE2 regexes -> the subscribed topics;
- `heartbeat`: ConsumerGroupHeartbeat, leave, timeouts and offset checks, as decisions.
"""
