"""The broker process keeps freed memory, so request-sized buffers stop page-faulting."""
import platform
import subprocess
import sys

import pytest

SNIPPET = r"""
import collections, resource, sys
if sys.argv[1] == "tuned":
    from praha.broker.malloc import keep_freed_memory
    assert keep_freed_memory()
data = b"x" * (1 << 20)
alive = collections.deque()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):  # what the socket server does: a 1 MiB body per produce request,
    body = bytearray(len(data))  # a few of them alive at once (requests awaiting acks)
    body[:] = data
    alive.append(body)
    if len(alive) > 3:
        alive.popleft()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def faults(mode: str) -> int:
    out = subprocess.run([sys.executable, "-c", SNIPPET, mode], capture_output=True, text=True, check=True, timeout=60)
    return int(out.stdout.strip())


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the thresholds are glibc's")
def test_request_sized_buffers_are_reused_not_faulted_in_again():
    default, tuned = faults("default"), faults("tuned")
    # 200 bodies of 1 MiB are 51,200 pages: by default glibc maps and unmaps most of them
    assert default > 10_000
    assert tuned < 2_000
