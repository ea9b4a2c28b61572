"""Hosts of their own: each ZooKeeper server and broker in a Linux network namespace.

A layout is one bridge in the root namespace (address 198.18.<k>.1/24) and, per node, a
namespace with a veth pair: `eth0` inside, with 198.18.<k>.<n>/24, its other end on the
bridge. 198.18.0.0/15 is reserved for benchmarking and never routed, so nothing leaves the
machine; clients in the root namespace reach every node through the bridge.

Names carry praha's prefix and the layout's index k (0–255, one /24 each), so that
leftovers of a crashed run can be found and removed by name alone:
  namespaces   praha-<k>-<node>      (node: zk1, b1, ...)
  links        prh<k>-br (bridge), prh<k>-<node> (the root end of a node's veth)
The layout is written to a JSON file *before* anything is created; `teardown` reads it
back, so a crash of the command that made them never strands them. Needs root
(CAP_NET_ADMIN) and iproute2's `ip`.

The plan (names, addresses, commands) is pure; `create`/`teardown` run the commands.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from praha.common import netns_preexec as preexec  # noqa: F401 - re-exported
from praha.errors import PrahaError

log = logging.getLogger(__name__)

NS_PREFIX = "praha-"
LINK_PREFIX = "prh"
NET = "198.18"
#: the bridge's own address in each /24; nodes are numbered from FIRST_HOST
GATEWAY_HOST = 1
FIRST_HOST = 10
LOCK_FILE = Path("/run/praha-netns/lock")
#: every live layout's record, by index (leftover cleanup learns the creators from here)
REGISTRY = Path("/run/praha-netns")
_NS_RE = re.compile(rf"^{NS_PREFIX}(\d+)-([a-z0-9]+)$")
_LINK_RE = re.compile(rf"^{LINK_PREFIX}(\d+)-([a-z0-9]+)$")


class NetnsError(PrahaError):
    pass


@dataclass(frozen=True)
class NetnsNode:
    name: str      # zk1, b1, ...
    netns: str     # praha-<k>-<name>
    link: str      # root end of the veth: prh<k>-<name>
    address: str   # 198.18.<k>.<n>


@dataclass
class NetnsLayout:
    index: int
    nodes: dict[str, NetnsNode] = field(default_factory=dict)
    #: pid of the command that created it (leftover cleanup spares layouts whose creator lives)
    creator_pid: int = -1

    @property
    def bridge(self) -> str:
        return f"{LINK_PREFIX}{self.index}-br"

    @property
    def gateway(self) -> str:
        """The root namespace's address on the bridge: where clients' packets come from."""
        return f"{NET}.{self.index}.{GATEWAY_HOST}"

    def node(self, name: str) -> NetnsNode:
        try:
            return self.nodes[name]
        except KeyError:
            raise NetnsError(f"no node {name!r} in network layout {self.index} "
                             f"(nodes: {', '.join(self.nodes)})") from None

    def to_json(self) -> str:
        return json.dumps({"index": self.index, "creator_pid": self.creator_pid,
                           "nodes": [asdict(n) for n in self.nodes.values()]}, indent=1)

    @classmethod
    def from_json(cls, text: str) -> NetnsLayout:
        d = json.loads(text)
        nodes = [NetnsNode(**n) for n in d["nodes"]]
        return cls(int(d["index"]), {n.name: n for n in nodes}, int(d.get("creator_pid", -1)))

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(self.to_json())
        tmp.replace(path)

    @classmethod
    def load(cls, path: Path) -> NetnsLayout | None:
        try:
            return cls.from_json(path.read_text())
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError) as e:
            raise NetnsError(f"{path} is not a network layout: {e}") from None


# ---------------------------------------------------------------------------- the plan (pure)
def plan(index: int, names: list[str]) -> NetnsLayout:
    """Names and addresses for `names` (e.g. ["zk1", "b1", "b2"]) in the /24 of `index`."""
    if not 0 <= index <= 255:
        raise NetnsError(f"layout index {index} out of 0..255")
    if len(names) > 254 - FIRST_HOST:
        raise NetnsError(f"{len(names)} nodes do not fit in one /24")
    nodes = {}
    for i, name in enumerate(names):
        if not re.fullmatch(r"[a-z0-9]{1,6}", name):
            raise NetnsError(f"node name {name!r}: 1 to 6 lower-case letters or digits")
        nodes[name] = NetnsNode(name, f"{NS_PREFIX}{index}-{name}", f"{LINK_PREFIX}{index}-{name}",
                                f"{NET}.{index}.{FIRST_HOST + i}")
    return NetnsLayout(index, nodes, os.getpid())


def up_commands(layout: NetnsLayout) -> list[list[str]]:
    br = layout.bridge
    cmds = [["ip", "link", "add", br, "type", "bridge"],
            ["ip", "addr", "add", f"{layout.gateway}/24", "dev", br],
            ["ip", "link", "set", br, "up"]]
    for n in layout.nodes.values():
        cmds += [["ip", "netns", "add", n.netns],
                 ["ip", "link", "add", n.link, "type", "veth", "peer", "name", "eth0", "netns", n.netns],
                 ["ip", "link", "set", n.link, "master", br, "up"],
                 ["ip", "-n", n.netns, "addr", "add", f"{n.address}/24", "dev", "eth0"],
                 ["ip", "-n", n.netns, "link", "set", "eth0", "up"],
                 ["ip", "-n", n.netns, "link", "set", "lo", "up"],
                 ["ip", "-n", n.netns, "route", "add", "default", "via", layout.gateway]]
    return cmds


def down_commands(layout: NetnsLayout) -> list[list[str]]:
    """Deleting a namespace deletes its veth pair; the root ends and the bridge go explicitly
    too (a half-made layout may have a link without its namespace)."""
    cmds = []
    for n in layout.nodes.values():
        cmds += [["ip", "netns", "del", n.netns], ["ip", "link", "del", n.link]]
    return cmds + [["ip", "link", "del", layout.bridge]]


# ---------------------------------------------------------------------------- running it
def unavailable_reason() -> str:
    """Why namespaces cannot be made here ("" if they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_NET_ADMIN)"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed"
    if not Path("/proc/self/ns/net").exists():
        return "this kernel has no network namespaces"
    return ""


def _run(cmd: list[str], check: bool = True, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30, input=stdin)
    if check and proc.returncode != 0:
        raise NetnsError(f"`{' '.join(cmd)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def existing_names() -> tuple[set[str], set[str]]:
    """praha's namespaces and links that exist now."""
    ns = {line.split()[0] for line in _run(["ip", "netns", "list"], check=False).stdout.splitlines() if line.strip()}
    links = set()
    for line in _run(["ip", "-o", "link", "show"], check=False).stdout.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            links.add(parts[1].strip().split("@")[0])
    return {n for n in ns if _NS_RE.match(n)}, {link for link in links if _LINK_RE.match(link)}


def _used_indexes() -> set[int]:
    ns, links = existing_names()
    used = {int(m[1]) for n in ns if (m := _NS_RE.match(n))}
    return used | {int(m[1]) for link in links if (m := _LINK_RE.match(link))}


def create(names: list[str], record: Path) -> NetnsLayout:
    """Make a layout for `names` on a free index; `record` is written before anything exists.
    On a failure everything made so far is removed again."""
    reason = unavailable_reason()
    if reason:
        raise NetnsError(reason)
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two creators must not pick one index
        used = _used_indexes()
        free = next((k for k in range(256) if k not in used), None)
        if free is None:
            raise NetnsError("all 256 praha network layouts are in use; run `praha cluster down --netns-leftovers`")
        layout = plan(free, names)
        layout.save(record)
        layout.save(REGISTRY / f"{layout.index}.json")
        try:
            for cmd in up_commands(layout):
                _run(cmd)
        except BaseException:
            teardown(layout)
            raise
    log.info("network layout %d: bridge %s (%s), %d namespaces", layout.index, layout.bridge, layout.gateway,
             len(layout.nodes))
    return layout


def teardown(layout: NetnsLayout) -> int:
    """Remove the layout's namespaces, links and bridge (whatever of them exists); returns
    how many were removed. Safe to repeat."""
    ns, links = existing_names()
    removed = 0
    for cmd in down_commands(layout):
        name = cmd[-1]
        if name in ns or name in links:
            if _run(cmd, check=False).returncode == 0:
                removed += 1
    (REGISTRY / f"{layout.index}.json").unlink(missing_ok=True)
    log.info("network layout %d removed (%d namespaces and links)", layout.index, removed)
    return removed


def teardown_recorded(record: Path) -> int:
    """`teardown` of the layout written at `record` (none: 0), then the record goes."""
    layout = NetnsLayout.load(record)
    if layout is None:
        return 0
    removed = teardown(layout)
    record.unlink(missing_ok=True)
    return removed


def _namespace_has_processes(name: str) -> bool:
    return bool(_run(["ip", "netns", "pids", name], check=False).stdout.strip())


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def cleanup_leftovers() -> list[int]:
    """Remove praha layouts nobody uses: no process in any of their namespaces and, where
    the registry names the creator, the creator gone. Returns the indexes removed."""
    ns, links = existing_names()
    by_index: dict[int, set[str]] = {}
    for n in ns:
        if m := _NS_RE.match(n):
            by_index.setdefault(int(m[1]), set()).add(n)
    for link in links:
        if m := _LINK_RE.match(link):
            by_index.setdefault(int(m[1]), set())
    creators = {}
    for r in REGISTRY.glob("*.json"):
        try:
            layout = NetnsLayout.load(r)
        except NetnsError:
            continue
        if layout is not None:
            creators[layout.index] = layout.creator_pid
    removed = []
    for k, names in sorted(by_index.items()):
        if _pid_alive(creators.get(k, -1)) or any(_namespace_has_processes(n) for n in names):
            continue
        for n in names:
            _run(["ip", "netns", "del", n], check=False)
        for link in sorted(x for x in links if (m := _LINK_RE.match(x)) and int(m[1]) == k):
            _run(["ip", "link", "del", link], check=False)
        (REGISTRY / f"{k}.json").unlink(missing_ok=True)
        removed.append(k)
    if removed:
        log.info("removed %d leftover praha network layouts: %s", len(removed), removed)
    return removed


def run_in(netns: str, cmd: list[str], check: bool = True, stdin: str | None = None
           ) -> subprocess.CompletedProcess[str]:
    """Run a short command inside a namespace (nft, ip)."""
    return _run(["ip", "netns", "exec", netns, *cmd], check=check, stdin=stdin)


# ---------------------------------------------------------------------------- packet filters
#: the nftables table praha owns in each node's namespace (deleting it heals the node)
NFT_TABLE = "praha_faults"


@dataclass(frozen=True)
class Drop:
    """Drop packets at one node: arriving from (`inbound`) or leaving for (`not inbound`)
    `peers` (addresses; empty = every packet on eth0), all of them or `percent` at random."""
    peers: tuple[str, ...] = ()
    inbound: bool = True
    percent: int = 100


def nft_script(drops: list[Drop]) -> str:
    """The nftables script that puts `drops` in place of the node's current rules (pure)."""
    inp: list[str] = []
    out: list[str] = []
    for d in drops:
        if d.peers:
            match = f"ip {'saddr' if d.inbound else 'daddr'} {{ {', '.join(d.peers)} }}"
        else:
            match = f"{'iifname' if d.inbound else 'oifname'} \"eth0\""
        chance = "" if d.percent >= 100 else f" numgen random mod 100 < {max(0, d.percent)}"
        (inp if d.inbound else out).append(f"    {match}{chance} drop")
    return "\n".join([
        f"table inet {NFT_TABLE}", f"delete table inet {NFT_TABLE}", f"table inet {NFT_TABLE} {{",
        "  chain input {", "    type filter hook input priority 0; policy accept;", *inp, "  }",
        "  chain output {", "    type filter hook output priority 0; policy accept;", *out, "  }",
        "}", ""])


def apply_drops(node: NetnsNode, drops: list[Drop]) -> None:
    """Replace the node's fault rules by `drops` (atomically: one nft transaction)."""
    if shutil.which("nft") is None:
        raise NetnsError("nftables' `nft` is not installed (make tools installs it)")
    run_in(node.netns, ["nft", "-f", "-"], stdin=nft_script(drops))


def heal(node: NetnsNode) -> None:
    """Remove every fault rule of the node (nothing to remove is fine)."""
    run_in(node.netns, ["nft", "delete", "table", "inet", NFT_TABLE], check=False)
    run_in(node.netns, ["nft", "delete", "table", "ip", DETOUR_TABLE], check=False)


#: the nftables table that sends a node's inbound connections through a proxy of its own
DETOUR_TABLE = "praha_detour"


def detour_script(peers: tuple[str, ...], routes: Mapping[int, int]) -> str:
    """nftables: new TCP connections from `peers` to each port of `routes` go to that port's
    proxy port on the same node instead (a redirect); packets of connections opened before
    are answered with a reset, so their clients reconnect — through the proxy (pure)."""
    source = f"ip saddr {{ {', '.join(peers)} }}"
    redirects = [f"    {source} tcp dport {port} redirect to :{proxy}" for port, proxy in routes.items()]
    resets = [f"    {source} tcp dport {port} reject with tcp reset" for port in routes]
    return "\n".join([
        f"table ip {DETOUR_TABLE}", f"delete table ip {DETOUR_TABLE}", f"table ip {DETOUR_TABLE} {{",
        "  chain prerouting {", "    type nat hook prerouting priority -100; policy accept;", *redirects, "  }",
        "  chain input {", "    type filter hook input priority 0; policy accept;", *resets, "  }",
        "}", ""])


def apply_detour(node: NetnsNode, peers: tuple[str, ...], routes: Mapping[int, int]) -> None:
    """`routes`: the node's port -> the port of the proxy in front of it."""
    if shutil.which("nft") is None:
        raise NetnsError("nftables' `nft` is not installed (make tools installs it)")
    run_in(node.netns, ["nft", "-f", "-"], stdin=detour_script(peers, routes))
