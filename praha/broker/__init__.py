"""The broker process: network, request handlers, metadata cache, replicas and logs."""
