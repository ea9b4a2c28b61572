"""A small real filesystem to fill up: a log directory that runs out of space (ENOSPC).

`TinyDisk(path, size_mb)` mounts a tmpfs of that size at `path` (root only; `available()`
says whether this machine allows it), `fill()` takes every free byte with a filler file so
the next write of a broker there fails with ENOSPC, `free()` removes the filler, and
`unmount()` (also on context exit) unmounts it, lazily so that a broker still holding files
open cannot keep it mounted. Used by the log-dir failure tests and the chaos campaign's
"full disk" fault; chmod would not do, since the tests run as root.
"""
from __future__ import annotations

import errno
import os
import subprocess
import uuid
from pathlib import Path
from types import TracebackType

FILLER = ".praha-disk-filler"
_CHUNK = b"\0" * (1 << 20)


def available() -> bool:
    """Whether a tmpfs can be mounted here (root in a sandbox that allows it)."""
    if os.geteuid() != 0:
        return False
    probe = Path("/tmp") / f"praha-tmpfs-probe-{uuid.uuid4().hex[:8]}"
    probe.mkdir()
    try:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)],
                            capture_output=True, timeout=10).returncode == 0
        if ok:
            subprocess.run(["umount", str(probe)], capture_output=True, timeout=10)
        return ok
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        probe.rmdir()


class TinyDisk:
    def __init__(self, path: str | Path, size_mb: int = 16):
        self.path = Path(path)
        self.size_mb = size_mb
        self.mounted = False

    def mount(self) -> TinyDisk:
        self.path.mkdir(parents=True, exist_ok=True)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m", "tmpfs", str(self.path)],
                       check=True, capture_output=True, timeout=10)
        self.mounted = True
        return self

    def fill(self) -> int:
        """Take every free byte (and inode headroom does not matter: data writes fail first);
        returns how many bytes the filler holds."""
        written = 0
        fd = os.open(self.path / FILLER, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            chunk = _CHUNK
            while True:
                try:
                    written += os.write(fd, chunk)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    if len(chunk) == 1:
                        break
                    chunk = chunk[: len(chunk) // 2]  # top up the last pages
        finally:
            os.close(fd)
        return written

    def free(self) -> None:
        (self.path / FILLER).unlink(missing_ok=True)

    def unmount(self) -> None:
        if self.mounted:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True, timeout=10)
            self.mounted = False

    def __enter__(self) -> TinyDisk:
        return self.mount()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.unmount()
