"""What a read of a log hands out: whole batches of one segment file (`LogSlice`), the same as
a file region on a descriptor of its own for `os.sendfile` (`FileRegion`), or copied bytes
(`ReadResult`). Reads never hold the log's lock past choosing the range; a slice stays valid
while its file lives, and a region even after the segment is closed or deleted.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from praha.log.errors import LogStorageError
from praha.log.segment import LogSegment


@dataclass(frozen=True, slots=True)
class LogSlice:
    """Whole batches in one segment file: enough for os.sendfile(sock, segment.fd, position, size)."""

    segment: LogSegment | None
    position: int
    size: int
    #: base offset of the first batch (may be below the requested offset), or the requested offset if empty
    first_offset: int
    #: offset after the last batch in the slice (the next fetch offset), or the requested offset if empty
    next_offset: int

    def read(self) -> bytes:
        if self.segment is None or self.size == 0:
            return b""
        return self.segment.read_bytes(self.position, self.size)

    def region(self) -> FileRegion | None:
        """The slice as a `FileRegion` on a descriptor of its own (None if empty), for a
        zero-copy send that may finish after the segment closed (retention, shutdown)."""
        if self.segment is None or self.size == 0:
            return None
        return FileRegion(os.dup(self.segment.fd), self.position, self.size)


class FileRegion:
    """`size` bytes at `position` of an open file: whole batches for `os.sendfile`.

    It owns `fd` (a duplicate of the segment's descriptor, so closing or deleting the
    segment cannot pull the file away or let the number be reused while a send waits
    for the socket); `close()` releases it, and so does dropping the last reference.
    The bytes are whatever the file holds when they are sent; a file cut short meanwhile
    (truncation) shows as a short `os.sendfile`, or a short `read()` (LogStorageError)."""

    __slots__ = ("fd", "position", "size")

    def __init__(self, fd: int, position: int, size: int):
        self.fd = fd
        self.position = position
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, position={self.position}, size={self.size})"

    def read(self) -> bytes:
        """The region's bytes (the copying fallback of a zero-copy send)."""
        if self.fd < 0:
            raise LogStorageError("file region already closed")
        try:
            data = os.pread(self.fd, self.size, self.position)
            if len(data) < self.size:
                chunks, got = [data], len(data)
                while got < self.size:
                    more = os.pread(self.fd, self.size - got, self.position + got)
                    if not more:
                        raise LogStorageError(f"file region cut short at {self.position + got}")
                    chunks.append(more)
                    got += len(more)
                data = b"".join(chunks)
        except OSError as e:
            raise LogStorageError(f"file region read failed: {e}") from e
        return data

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        try:
            self.close()
        except OSError:
            pass


@dataclass(frozen=True, slots=True)
class ReadResult:
    data: bytes | memoryview
    first_offset: int
    next_offset: int
    log_start_offset: int
    log_end_offset: int

    @property
    def size(self) -> int:
        return len(self.data)
