"""Let a broker process keep the memory it frees, so request-sized buffers are reused.

Why: glibc's malloc serves a block above its mmap threshold (128 KiB at first, then
raised to the size of the largest mmapped block freed, up to 32 MiB) with a fresh
mapping, and hands the top of its heap back to the kernel once twice that threshold is
free there. A broker allocates and frees buffers the size of a produce request (around
1 MiB), several alive at once, hundreds of times a second, so most are faulted in page
by page again (the unit test counts the faults). On this project's machine kind (a VM,
where a page fault is dear) the brokers of `bench/produce.py` took 4.2-4.7 CPU s per GiB
at RF 3 with the default thresholds and 3.7-3.9 with the ones below. A JVM broker keeps
its heap for the same reason.

The cost: a broker's RSS stays near its peak (plus up to `trim_threshold` of free heap)
instead of shrinking after a burst. Only glibc is tuned; elsewhere this is a no-op.
"""
from __future__ import annotations

import ctypes
import logging

log = logging.getLogger(__name__)

#: mallopt parameter numbers (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3

#: blocks up to this size come from the heap (32 MiB is glibc's own upper bound)
MMAP_THRESHOLD = 32 << 20
#: free memory at the top of the heap kept for reuse before any is given back
TRIM_THRESHOLD = 256 << 20


def keep_freed_memory(mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int = TRIM_THRESHOLD) -> bool:
    """Set glibc's mmap and trim thresholds for this process; False where that is not
    possible (another libc), which costs speed, never correctness."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1 and mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1)
    if not ok:
        log.info("could not set malloc thresholds; large request buffers will be faulted in afresh")
    return ok
