"""Share groups (KIP-932) on the partition leaders: share sessions, share partitions and
the manager that keeps their durable state."""
