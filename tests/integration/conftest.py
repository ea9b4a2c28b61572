"""Fixtures for tests with real broker processes: `cli`, which runs the `praha` command in
this process (the clusters come from `praha.testing.fixtures`: `module_cluster`, `make_cluster`)."""
from __future__ import annotations

import pytest

from praha.cli.main import main as praha_main


@pytest.fixture
def cli(capsys):
    """Run `praha ARGS` in this process: (exit code, stdout, stderr)."""

    def run(*args) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = praha_main([str(a) for a in args])
        out, err = capsys.readouterr()
        return rc, out, err

    return run
