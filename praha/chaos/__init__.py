"""Chaos campaigns: a real cluster, real clients, seeded faults, invariants checked.

`run_campaign(CampaignConfig(...))` starts ZooKeeper (one server or a 3-node ensemble) and N
brokers in a directory of its own, drives producers, consumers, a consumer group of member
processes and admin operations, injects the seeded fault schedule, heals, checks every
invariant and writes a report (JSON, summary, timeline plot). `praha chaos` is the
command-line entry point; `make chaos` runs the campaigns of `suite.py`. With `secure`,
every client logs in as a principal of its own (`principals.py`; `access.py` turns
credentials into each library's settings).

The names are imported on first use: the client processes (`python -m praha.chaos.member`,
`praha.chaos.txnclient`) start many at a time and must not pay for the campaign's imports.
"""
from __future__ import annotations

from typing import Any

__all__ = ["CampaignConfig", "run_campaign"]


def __getattr__(name: str) -> Any:
    if name == "run_campaign":
        from praha.chaos.campaign import run_campaign

        return run_campaign
    if name == "CampaignConfig":
        from praha.chaos.config import CampaignConfig

        return CampaignConfig
    raise AttributeError(name)
