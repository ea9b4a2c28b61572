"""The controller benches' fixed figures: brokers, replication factor, API keys."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BROKERS = 6
RF = 3
CONTROLLER_BROKER = 1
LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA, CONTROLLED_SHUTDOWN = 4, 5, 6, 7
CONTROLLED_SHUTDOWN_VERSION = 3
#: partition state znodes per multi-op in the raw write limit (fenced_multi's default)
RAW_WRITE_BATCH = 100

