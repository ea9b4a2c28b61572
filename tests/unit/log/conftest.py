from __future__ import annotations

import pytest

from praha.log import Log, LogConfig


@pytest.fixture
def open_log(tmp_path):
    """Factory for logs under tmp_path/<name> (default topic-0); closes them at the end."""
    logs = []

    def _open(name: str = "topic-0", **kwargs) -> Log:
        config = kwargs.pop("config", None) or LogConfig(file_delete_delay_ms=0)
        lg = Log(str(tmp_path / name), config, **kwargs)
        logs.append(lg)
        return lg

    yield _open
    for lg in logs:
        if not lg.closed:
            lg.close()
