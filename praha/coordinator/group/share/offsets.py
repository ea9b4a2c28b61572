"""KIP-932's share-group offsets admin (DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets) as decisions, pure: what a share partition's durable state says its
start offset and lag are, and which alterations Kafka refuses. The handlers read and write the
state (`praha.zk.share_state`)."""
from __future__ import annotations

from dataclasses import dataclass

from praha.errors import ErrorCode

#: the start offset and leader epoch DescribeShareGroupOffsets gives a partition without state
#: (Kafka's uninitialised share partition)
UNINITIALIZED = -1
#: records of a state batch that are done: acknowledged (2) or archived (4)
_DONE = frozenset({2, 4})


@dataclass(frozen=True)
class Refusal:
    error: ErrorCode
    message: str


def lag(start_offset: int, batches: tuple[tuple[int, int, int, int], ...], high_watermark: int) -> int:
    """Records between the start offset and the high watermark not yet acknowledged or archived
    (Kafka 4.2's share-partition lag); -1 when the high watermark is not known here."""
    if high_watermark < 0 or start_offset < 0:
        return -1
    done = sum(max(0, min(last, high_watermark - 1) - max(first, start_offset) + 1)
               for first, last, state, _ in batches if state in _DONE)
    return max(0, high_watermark - start_offset - done)


def group_refusal(group_id: str, coordinator: ErrorCode, other_type: bool, members: int,
                  exists: bool, needs_empty: bool) -> Refusal | None:
    """The group-level error of an offsets request, or None: not this broker's group, a classic
    or consumer group, an unknown group (describe and delete), members present (alter, delete)."""
    if coordinator != ErrorCode.NONE:
        return Refusal(coordinator, "The group id must not be empty." if coordinator == ErrorCode.INVALID_REQUEST
                       else f"Group {group_id}: {coordinator.name}.")
    if other_type:
        return Refusal(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
    if not exists:
        return Refusal(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
    if needs_empty and members:
        return Refusal(ErrorCode.NON_EMPTY_GROUP, f"The group {group_id} has {members} active members; "
                                                   "its share offsets change only while it has none.")
    return None


def start_offset_refusal(start_offset: int) -> Refusal | None:
    if start_offset < 0:
        return Refusal(ErrorCode.INVALID_REQUEST, f"The start offset {start_offset} is negative.")
    return None
