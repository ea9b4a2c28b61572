"""The `praha` command."""
