"""Kafka's byte-level encodings that the wire protocol, the log and every reader of record
batches share: varints (`varint`) and the batch compression codecs (`compression`). One
home each, below every package that reads or writes Kafka bytes; it imports only `errors`."""
