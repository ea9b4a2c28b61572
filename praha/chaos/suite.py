"""`make chaos`: the seeded campaigns that together inject at least 1,000 faults, every one
with the transactional workload, every fault kind among them.

  python -m praha.chaos.suite [--list] [--only SEED,...] [--dir D]

SUITE declares the campaigns: 4 on loopback (one on a 3-node ZooKeeper ensemble), 20 with
every node on a host of its own (`--netns`, root only; even seeds on an ensemble, seeds
203, 207, ... `--secure`). Their fault schedules are a pure function of the seeds, so a unit
test checks the total and the kinds without running anything. Each campaign runs as
`praha chaos ... --json` (niced: the machine is shared), one after the other, every one even if
an earlier one failed; the exit status is 1 if any did. `--list` prints the command lines only.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from praha.chaos.config import CampaignConfig


@dataclass(frozen=True)
class SuiteCampaign:
    seed: int
    faults: int
    brokers: int = 5
    zk_ensemble: int = 1
    netns: bool = True
    secure: bool = False

    def arguments(self) -> list[str]:
        return ["--brokers", str(self.brokers), "--faults", str(self.faults), "--seed", str(self.seed),
                "--zk-ensemble", str(self.zk_ensemble), "--workload", "txn",
                *(["--netns"] if self.netns else []), *(["--secure"] if self.secure else [])]

    def config(self) -> CampaignConfig:
        return CampaignConfig(brokers=self.brokers, faults=self.faults, seed=self.seed, zk_ensemble=self.zk_ensemble,
                              netns=self.netns, secure=self.secure, workload="txn")


NETNS_FAULTS = 40
SUITE: tuple[SuiteCampaign, ...] = (
    SuiteCampaign(101, 50, netns=False),
    SuiteCampaign(102, 50, zk_ensemble=3, netns=False),
    SuiteCampaign(103, 50, brokers=3, netns=False),
    SuiteCampaign(104, 50, netns=False),
    *(SuiteCampaign(seed, NETNS_FAULTS, zk_ensemble=3 if seed % 2 == 0 else 1, secure=seed % 4 == 3)
      for seed in range(201, 221)),
)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m praha.chaos.suite", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--list", action="store_true", help="print each campaign's command line, run nothing")
    p.add_argument("--only", default="", help="comma-separated seeds: run only these campaigns of the suite")
    p.add_argument("--dir", type=Path, default=Path(".praha/chaos"), help="where campaigns write")
    args = p.parse_args(argv)
    only = {int(s) for s in args.only.split(",") if s.strip()}
    unknown = only - {c.seed for c in SUITE}
    if unknown:
        p.error(f"--only: seeds {sorted(unknown)} are not in the suite")
    status = 0
    for c in SUITE:
        if only and c.seed not in only:
            continue
        cmd = ["nice", "-n", "10", sys.executable, "-m", "praha", "chaos", *c.arguments(), "--dir", str(args.dir),
               "--json"]
        print(" ".join(cmd[3:]), flush=True)
        if args.list:
            continue
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        lines = proc.stdout.strip().splitlines()
        print(lines[-1] if lines and lines[-1].startswith("{") else json.dumps(
            {"seed": c.seed, "error": f"no JSON line (exit {proc.returncode})"}), flush=True)
        status |= int(proc.returncode != 0)
    return status


if __name__ == "__main__":
    sys.exit(main())
