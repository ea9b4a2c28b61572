"""`praha console`: a web console for a cluster (brokers and the controller, topics, messages,
groups with lag, transactions, ACLs, quotas, schemas, the controller's timeline).

It talks to the cluster only as a client would: the Kafka protocol (confluent-kafka's admin,
consumer and producer, and praha's own wire clients) and ZooKeeper reads. `docs/console.md`.
"""
