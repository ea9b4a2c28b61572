"""The Schema Registry every broker serves (Confluent's REST API): pure rules (parsing,
canonical forms, compatibility) apart from the I/O (the `_schemas` topic, the primary's
seat in ZooKeeper, the HTTP server). docs/schema-registry.md describes it."""
