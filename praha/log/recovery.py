"""Opening a partition directory after a clean or unclean stop.

Steps:
1. Finish or undo a log cleaner swap cut short (`complete_swaps`: `.cleaned` files go,
   a `.log.swap` replaces the segments it covers), then remove leftovers: `*.deleted`
   segments whose deletion was cut short, `*.tmp` files from interrupted atomic writes,
   and index files whose `.log` is gone.
2. Open every `<base>.log` in offset order.
3. Choose what to check: nothing after a clean shutdown; otherwise the segment holding
   the recovery point and every later one (all of them without a recovery point).
   Segments whose index looks wrong (missing, torn size, pointing past the log) are
   checked as well, wherever they are.
4. Check each chosen segment batch by batch (framing, magic, CRC, offset order) and
   rebuild its indexes. At the first bad batch cut the file there and delete every
   later segment: nothing after a corrupt batch is ever served.
5. Unchecked segments learn their end cheaply: sealed ones from the next segment's
   base, the last one from its index tail plus a short header scan (falling back to
   a full check if that does not add up).
The caller logs one line from the returned `RecoveryReport`.
"""
from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass

from praha.log.batch import HEADER_SIZE, check_crc, parse_header
from praha.log.checkpoints import fsync_dir
from praha.log.config import LogConfig
from praha.log.errors import CorruptBatchError, CorruptIndexError
from praha.log.segment import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX, LogSegment

_SEGMENT_RE = re.compile(r"^(\d{20})\.(log|index|timeindex|txnindex)$")


@dataclass(slots=True)
class RecoveryReport:
    segments: int = 0
    checked_segments: int = 0
    checked_batches: int = 0
    index_rebuilds: int = 0  # segments checked only because their index looked wrong
    truncated_bytes: int = 0
    truncated_at_offset: int | None = None
    reason: str | None = None
    deleted_segments: int = 0
    leftovers_removed: int = 0
    epoch_cache_rebuilt: bool = False
    #: base offset of the first segment checked (its aborted-transaction index is rebuilt from there)
    first_checked_base: int | None = None

    @property
    def eventful(self) -> bool:
        """Whether anything was wrong (worth a warning rather than a debug line)."""
        return bool(self.truncated_bytes or self.deleted_segments or self.index_rebuilds or self.epoch_cache_rebuilt)

    def describe(self) -> str:
        parts = [
            f"{self.segments} segments, {self.checked_segments} checked ({self.checked_batches} batches)",
        ]
        if self.index_rebuilds:
            parts.append(f"{self.index_rebuilds} indexes rebuilt")
        if self.truncated_bytes:
            parts.append(f"truncated {self.truncated_bytes} bytes at offset {self.truncated_at_offset} ({self.reason})")
        if self.deleted_segments:
            parts.append(f"{self.deleted_segments} later segments deleted")
        if self.leftovers_removed:
            parts.append(f"{self.leftovers_removed} leftover files removed")
        if self.epoch_cache_rebuilt:
            parts.append("leader epoch cache rebuilt")
        return ", ".join(parts)


def swap_end_offset(path: str, base_offset: int) -> int:
    """The offset after the last intact batch of a `.swap` log file (its base if none)."""
    nxt = base_offset
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos = 0
        while pos < size:
            head = os.pread(fd, HEADER_SIZE, pos)
            try:
                h = parse_header(head, 0, pos, size)
                data = os.pread(fd, h.size, pos)
                if len(data) < h.size:
                    break
                check_crc(data, h, 0)
            except CorruptBatchError:
                break
            nxt = h.next_offset
            pos += h.size
    finally:
        os.close(fd)
    return nxt


def complete_swaps(directory: str) -> int:
    """Step 1a, the cleaner's crash rule (Kafka's): `.cleaned` files are an unfinished
    output, deleted; index `.swap` files are deleted (rebuilt from their log) except the
    aborted-transaction index, which cannot be rebuilt from its log alone and goes with it;
    a `<base>.log.swap` is a complete output whose originals may still be present: every
    other segment file with a base offset in [base, end of the swap) is deleted, then the
    suffix is dropped. Returns how many files were removed or renamed."""
    names = os.listdir(directory)
    changed = 0
    swaps: list[tuple[int, str]] = []
    txn_swaps: dict[int, str] = {}
    for name in names:
        path = os.path.join(directory, name)
        if name.endswith(CLEANED_SUFFIX):
            os.unlink(path)
            changed += 1
        elif name.endswith(SWAP_SUFFIX):
            m = _SEGMENT_RE.match(name[: -len(SWAP_SUFFIX)])
            if m is not None and m.group(2) == "log":
                swaps.append((int(m.group(1)), name))
            elif m is not None and m.group(2) == "txnindex":
                txn_swaps[int(m.group(1))] = name
            else:
                os.unlink(path)
                changed += 1
    for base, name in swaps:
        path = os.path.join(directory, name)
        end = max(swap_end_offset(path, base), base + 1)
        for other in os.listdir(directory):
            m = _SEGMENT_RE.match(other)
            if m is not None and base <= int(m.group(1)) < end:
                os.unlink(os.path.join(directory, other))
                changed += 1
        os.rename(path, path[: -len(SWAP_SUFFIX)])
        changed += 1
        txn = txn_swaps.pop(base, None)
        if txn is not None:
            txn_path = os.path.join(directory, txn)
            os.rename(txn_path, txn_path[: -len(SWAP_SUFFIX)])
            changed += 1
    for name in txn_swaps.values():  # no log swap: an unfinished output
        os.unlink(os.path.join(directory, name))
        changed += 1
    if changed:
        fsync_dir(directory)
    return changed


def remove_leftovers(directory: str) -> tuple[list[int], int]:
    """Step 1: delete leftovers; returns the sorted segment base offsets and a count."""
    removed = complete_swaps(directory)
    names = os.listdir(directory)
    bases = set()
    index_files: list[tuple[int, str]] = []
    for name in names:
        if name.endswith(DELETED_SUFFIX) or name.endswith(".tmp"):
            os.unlink(os.path.join(directory, name))
            removed += 1
            continue
        m = _SEGMENT_RE.match(name)
        if m is None:
            continue
        if m.group(2) == "log":
            bases.add(int(m.group(1)))
        else:
            index_files.append((int(m.group(1)), name))
    for base, name in index_files:
        if base not in bases:
            os.unlink(os.path.join(directory, name))
            removed += 1
    return sorted(bases), removed


def load_segments(
    directory: str,
    config: LogConfig,
    *,
    recovery_point: int | None,
    clean_shutdown: bool,
    epochs_out: list[tuple[int, int]],
) -> tuple[list[LogSegment], RecoveryReport]:
    """Steps 1-5; `epochs_out` collects (leader epoch, base offset) from checked batches."""
    bases, removed = remove_leftovers(directory)
    report = RecoveryReport(segments=len(bases), leftovers_removed=removed)
    segments = [LogSegment.open(directory, b, config.index_interval_bytes) for b in bases]
    if clean_shutdown:
        check_from = len(segments)
    elif recovery_point is None:
        check_from = 0
    else:
        check_from = max(0, bisect.bisect_right(bases, recovery_point) - 1)

    kept: list[LogSegment] = []
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        needs_check = i >= check_from or seg.index_suspect
        if not needs_check:
            try:
                if last:
                    seg.load_tail()
                    seg.ensure_indexes()
                else:
                    seg.load_sealed(segments[i + 1].base_offset)
            except (CorruptIndexError, CorruptBatchError):
                needs_check = True
        if needs_check:
            if i < check_from:
                report.index_rebuilds += 1
            result = seg.recover(epochs_out)
            if report.first_checked_base is None:
                report.first_checked_base = seg.base_offset
            report.checked_segments += 1
            report.checked_batches += result.batches
            reason = result.reason
            if reason is None and not last and seg.next_offset is not None \
                    and seg.next_offset > segments[i + 1].base_offset:
                reason = "offsets overlap the next segment"
            if reason is not None:
                report.truncated_bytes += result.truncated_bytes
                report.truncated_at_offset = seg.next_offset
                report.reason = reason
                kept.append(seg)
                for later in segments[i + 1 :]:
                    later.delete_files()
                    report.deleted_segments += 1
                break
        kept.append(seg)
    return kept, report

