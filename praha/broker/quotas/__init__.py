"""Quota decisions with no I/O: client quotas (produce, fetch, request time) and
replication throttles."""
