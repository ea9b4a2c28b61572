"""JSON schemas (kafka-python's format) of the controller APIs kafka-python lacks.

Each file gives the wire layout of an Apache Kafka message up to the version praha
speaks; lower versions are kept so the declared range is true, not just the top.
"""
