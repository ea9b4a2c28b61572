"""What a campaign killed from outside (SIGKILL, a test's timeout) leaves behind, and its removal.

A campaign's `close()` stops everything it started, but a SIGKILLed campaign runs no code:
its brokers, ZooKeeper ensemble, transactional and group client processes and delaying
proxies live on, its `full_disk` tmpfs directories stay mounted, and its network namespaces
(with their nftables rules) stay, kept "in use" by those processes. So every campaign first
*claims* its directory: a record in REGISTRY naming its pid (with the pid's start time, so a
reused pid does not pass for it) and its directory, written before anything is started and
removed after `close()`. `cleanup_leftovers()` treats the directory of every claim whose
owner is gone as abandoned, and there removes

  processes  every process whose working directory or command line lies in that directory,
             and every process in one of its recorded network namespaces (resumed, then SIGKILLed);
  mounts     every mount point below that directory (the tmpfs log dirs), unmounted lazily;
  networks   its recorded layout (namespaces, so their nftables tables too, veths, bridge);

then whatever praha network layout nobody uses (`netns.cleanup_leftovers`). Each campaign
runs it before it starts, `praha chaos cleanup` runs it on demand. Which process and which
mount belong to a directory is decided by pure functions over /proc's text.
"""
from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from praha.cluster import netns

log = logging.getLogger(__name__)

#: where live campaigns' claims are kept (root: /run, cleared at boot; otherwise per user)
REGISTRY = Path("/run/praha-chaos") if os.geteuid() == 0 else Path(tempfile.gettempdir()) / f"praha-chaos-{os.getuid()}"
_OCTAL = re.compile(r"\\([0-7]{3})")
#: how long the killed processes get to vanish (SIGKILL: normally at once)
KILL_WAIT_S = 15.0


@dataclass(frozen=True)
class Claim:
    """A campaign's directory and the process that owns it (pid and that pid's start time)."""
    pid: int
    start_ticks: int
    root: str

    @property
    def path(self) -> Path:
        return REGISTRY / f"{self.pid}-{self.start_ticks}.json"


@dataclass(frozen=True)
class Removed:
    """What one abandoned campaign directory still had."""
    root: str
    processes: int
    mounts: int
    namespaces: int


# ---------------------------------------------------------------------------- decisions (pure)
def start_ticks_of(stat_text: str) -> int:
    """The start time (field 22 of /proc/PID/stat) of a process; the command name before it
    may hold spaces and parentheses, so fields are counted from the last ')'."""
    return int(stat_text.rsplit(")", 1)[1].split()[19])


def belongs(root: str, cwd: str, argv: list[str]) -> bool:
    """Whether a process works in `root` or names a path in it (brokers run in their own
    directory there; clients and ZooKeeper servers take files there as arguments)."""
    inside = root.rstrip("/") + "/"
    return (cwd + "/").startswith(inside) or any(inside in a or a == root for a in argv)


def mounts_below(root: str, mounts_text: str) -> list[str]:
    """Mount points strictly below `root`, deepest first, from /proc/self/mounts' text (whose
    paths escape spaces and the like as octal: \\040)."""
    inside = root.rstrip("/") + "/"
    found = []
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        target = _OCTAL.sub(lambda m: chr(int(m[1], 8)), parts[1])
        if target.startswith(inside):
            found.append(target)
    return sorted(set(found), key=lambda p: (-p.count("/"), p))


# ---------------------------------------------------------------------------- claims
def _start_ticks(pid: int) -> int:
    try:
        return start_ticks_of(Path(f"/proc/{pid}/stat").read_text())
    except (OSError, ValueError, IndexError):
        return -1


def claim(root: Path) -> Claim:
    """Record that this process owns the campaign directory `root` (before anything starts)."""
    c = Claim(os.getpid(), _start_ticks(os.getpid()), str(root.resolve()))
    REGISTRY.mkdir(parents=True, exist_ok=True)
    tmp = c.path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(c)))
    tmp.replace(c.path)
    return c


def release(c: Claim) -> None:
    """The campaign stopped everything itself: its claim goes."""
    c.path.unlink(missing_ok=True)


def claims() -> list[Claim]:
    found = []
    for p in sorted(REGISTRY.glob("*.json")):
        try:
            found.append(Claim(**json.loads(p.read_text())))
        except (OSError, ValueError, TypeError):
            log.warning("unreadable campaign claim %s: removed", p)
            p.unlink(missing_ok=True)
    return found


def owner_alive(c: Claim) -> bool:
    return c.start_ticks >= 0 and _start_ticks(c.pid) == c.start_ticks


# ---------------------------------------------------------------------------- removal
def processes_working_in(root: str) -> set[int]:
    """Every process (but this one and its parent) whose directory or arguments lie in `root`."""
    spared = {os.getpid(), os.getppid()}
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in spared:
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:  # gone meanwhile, or not ours to see
            continue
        if belongs(root, cwd, argv):
            pids.add(int(entry.name))
    return pids


def _processes_in(root: str, namespaces: set[str]) -> set[int]:
    pids = processes_working_in(root)
    for ns in namespaces:
        out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=30).stdout
        pids |= {int(w) for w in out.split() if w.isdigit()}
    return pids - {os.getpid(), os.getppid()}


def _kill(pids: set[int]) -> None:
    for pid in pids:
        for sig in (signal.SIGCONT, signal.SIGKILL):  # a paused process is resumed so it dies at once
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                break
    deadline = time.monotonic() + KILL_WAIT_S
    while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() for p in pids):
        time.sleep(0.1)


def remove_campaign(root: str) -> Removed:
    """Stop every process of the campaign directory `root`, unmount what is mounted below it
    and remove its network layout; safe to repeat."""
    record = Path(root) / "netns.json"
    try:
        layout = netns.NetnsLayout.load(record)
    except netns.NetnsError:
        layout = None
    existing = netns.existing_names()[0] if layout is not None else set()
    namespaces = {n.netns for n in layout.nodes.values()} & existing if layout is not None else set()
    pids = _processes_in(root, namespaces)
    _kill(pids)
    mounts = mounts_below(root, Path("/proc/self/mounts").read_text())
    for m in mounts:
        subprocess.run(["umount", "-l", m], capture_output=True, timeout=30)
    removed_links = netns.teardown_recorded(record) if layout is not None else 0
    return Removed(root, len(pids), len(mounts), removed_links)


def cleanup_leftovers() -> list[Removed]:
    """Remove what every campaign whose owner is gone left behind, then every praha network
    layout nobody uses; returns what each abandoned campaign still had."""
    done = []
    for c in claims():
        if owner_alive(c):
            continue
        done.append(remove_campaign(c.root))
        release(c)
    if not netns.unavailable_reason():
        netns.cleanup_leftovers()
    if done:
        log.info("removed %d abandoned campaigns: %d processes, %d mounts, %d namespaces and links", len(done),
                 sum(r.processes for r in done), sum(r.mounts for r in done), sum(r.namespaces for r in done))
    return done
