"""Chaos campaigns: a real cluster, real clients, seeded faults, invariants checked.

`run_campaign(CampaignConfig(...))` starts ZooKeeper (one server or a 3-node ensemble)
and N brokers in a directory of its own, drives producers, consumers, a consumer group of member processes and admin operations,
injects the seeded fault schedule, heals, checks every invariant and writes a report
(JSON, summary, timeline plot). `praha chaos` is the command-line entry point.
"""
from praha.chaos.campaign import run_campaign
from praha.chaos.config import CampaignConfig

__all__ = ["CampaignConfig", "run_campaign"]
