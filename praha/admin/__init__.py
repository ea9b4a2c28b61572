"""Admin operations used by the CLI and by tests: read-only status, topic tools."""
