"""praha: a Kafka-compatible replicated log cluster."""
