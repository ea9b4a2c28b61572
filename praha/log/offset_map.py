"""The cleaner's key → last offset map (Kafka's SkimpyOffsetMap), bounded by the dedupe buffer.

Keys are stored as at most 16 bytes: their 16-byte MD5 digest as in Kafka, or, when
shorter than 16 bytes, the key itself (exact, and no hashing; the lengths differ, so a
short key never equals a digest). A buffer of B bytes holds at most B / 24 entries
(Kafka's budget: 16 B hash + 8 B offset), and the cleaner stops adding at `load_factor`
of that (Kafka's 0.9), ending the dirty range there. Two long keys with the same digest
would share an entry, as in Kafka (MD5 makes that vanishingly unlikely). No I/O here.
"""
from __future__ import annotations

from hashlib import md5

HASH_BYTES = 16
OFFSET_BYTES = 8
ENTRY_BYTES = HASH_BYTES + OFFSET_BYTES
DEFAULT_LOAD_FACTOR = 0.9


class OffsetMap:
    """key digest → the largest offset seen for it, plus the largest offset mapped."""

    __slots__ = ("slots", "max_entries", "_map", "latest_offset", "lookups", "puts")

    def __init__(self, buffer_bytes: int, load_factor: float = DEFAULT_LOAD_FACTOR):
        self.slots = max(buffer_bytes // ENTRY_BYTES, 0)
        self.max_entries = int(self.slots * load_factor)
        if self.max_entries < 1:
            raise ValueError(f"dedupe buffer of {buffer_bytes} bytes cannot hold a single entry")
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1
        self.lookups = 0
        self.puts = 0

    def __len__(self) -> int:
        return len(self._map)

    @property
    def full(self) -> bool:
        return len(self._map) >= self.max_entries

    @property
    def utilization(self) -> float:
        return len(self._map) / self.slots if self.slots else 0.0

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1

    @staticmethod
    def digest(key: bytes) -> bytes:
        """What the map stores for `key`: itself if shorter than 16 bytes, else its MD5."""
        return key if len(key) < HASH_BYTES else md5(key, usedforsecurity=False).digest()

    def raw_map(self) -> dict[bytes, int]:
        """The digest → offset dict itself, for the cleaner's hot loops (which keep to the
        bound themselves and update `latest_offset`)."""
        return self._map

    def put(self, key: bytes, offset: int) -> bool:
        """Map `key` to `offset`; False (nothing stored) if the map is full and the key new."""
        d = key if len(key) < HASH_BYTES else md5(key, usedforsecurity=False).digest()
        m = self._map
        if d not in m and len(m) >= self.max_entries:
            return False
        m[d] = offset
        self.puts += 1
        if offset > self.latest_offset:
            self.latest_offset = offset
        return True

    def get(self, key: bytes) -> int:
        """The offset mapped for `key`, or -1."""
        self.lookups += 1
        return self._map.get(key if len(key) < HASH_BYTES else md5(key, usedforsecurity=False).digest(), -1)

    def update_latest_offset(self, offset: int) -> None:
        if offset > self.latest_offset:
            self.latest_offset = offset
