"""Chroot prefixing of request paths, cheaper than kazoo's for the common case.

kazoo's `_prefix_root` re-normalises every path; at 100k paths per failover read (and per
10k-partition write) that costs as much as decoding the answers. A path that is already a
normal absolute one only needs the chroot in front; any other path goes through kazoo's own,
so the result (or the error) is always exactly kazoo's.
"""
from __future__ import annotations

from kazoo.client import KazooClient, _prefix_root


def is_plain_path(path: str) -> bool:
    """An already normal absolute path ("/a/b"): kazoo would give back chroot + path for it."""
    return path[:1] == "/" and path[-1:] != "/" and "//" not in path and "/." not in path


def chrooted(client: KazooClient, path: str) -> str:
    """`_prefix_root(client.chroot, path)`; the chroot is kept normalised by kazoo ("" without one)."""
    root: str = client.chroot or ""
    if is_plain_path(path):
        return root + path
    prefixed: str = _prefix_root(root, path)
    return prefixed
