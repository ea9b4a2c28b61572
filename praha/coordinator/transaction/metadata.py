"""A transactional id's state and the table of its legal transitions (Kafka's
`TransactionMetadata`), with no I/O.

A change is made in two steps, as Kafka does: `prepare_*` checks the move against the
state table and returns the target (`TxnTransit`) while marking it pending — any other
request for the id meanwhile gets CONCURRENT_TRANSACTIONS —; the coordinator writes the
target to `__transaction_state` and, once replicated, `complete(transit)` applies it (or
`abandon()` drops it when the write failed).

    Empty ──AddPartitions/AddOffsets──▶ Ongoing ──EndTxn(commit)──▶ PrepareCommit ──markers──▶ CompleteCommit
      ▲                                  │  └────EndTxn(abort)───▶ PrepareAbort ──markers──▶ CompleteAbort
      │                                  └─timeout / new incarnation─▶ PrepareEpochFence ─▶ PrepareAbort
      └──────── InitProducerId (epoch bump) from Empty / CompleteCommit / CompleteAbort
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import Enum

from praha.errors import ErrorCode

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
#: an epoch this high cannot be bumped again: the producer id is rotated instead
MAX_EPOCH = 32767 - 1


class TxnState(Enum):
    """The states with Kafka's ids (the byte written in `__transaction_state`) and names."""

    EMPTY = (0, "Empty")
    ONGOING = (1, "Ongoing")
    PREPARE_COMMIT = (2, "PrepareCommit")
    PREPARE_ABORT = (3, "PrepareAbort")
    COMPLETE_COMMIT = (4, "CompleteCommit")
    COMPLETE_ABORT = (5, "CompleteAbort")
    DEAD = (6, "Dead")
    PREPARE_EPOCH_FENCE = (7, "PrepareEpochFence")

    @property
    def id(self) -> int:
        return self.value[0]

    @property
    def display(self) -> str:
        return self.value[1]

    @classmethod
    def of_id(cls, state_id: int) -> TxnState:
        for s in cls:
            if s.id == state_id:
                return s
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def of_name(cls, name: str) -> TxnState | None:
        return next((s for s in cls if s.display.lower() == name.lower()), None)

    @property
    def expiration_allowed(self) -> bool:
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @property
    def completing(self) -> bool:
        return self in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)


#: Kafka's validPreviousStates: where each state may be entered from
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.EMPTY: frozenset({TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT}),
    TxnState.ONGOING: frozenset({TxnState.ONGOING, TxnState.EMPTY, TxnState.COMPLETE_COMMIT,
                                 TxnState.COMPLETE_ABORT}),
    TxnState.PREPARE_COMMIT: frozenset({TxnState.ONGOING}),
    TxnState.PREPARE_ABORT: frozenset({TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE}),
    TxnState.COMPLETE_COMMIT: frozenset({TxnState.PREPARE_COMMIT}),
    TxnState.COMPLETE_ABORT: frozenset({TxnState.PREPARE_ABORT}),
    TxnState.DEAD: frozenset({TxnState.EMPTY, TxnState.COMPLETE_ABORT, TxnState.COMPLETE_COMMIT}),
    TxnState.PREPARE_EPOCH_FENCE: frozenset({TxnState.ONGOING}),
}


class TxnTransitionError(Exception):
    """A move the state table forbids, or one made while another is pending; carries the
    Kafka error the client gets."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


Partition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The target of one transition: what is written to `__transaction_state`."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[Partition]
    start_ms: int
    last_update_ms: int


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    partitions: set[Partition] = field(default_factory=set)
    start_ms: int = -1
    last_update_ms: int = -1
    last_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    pending: TxnTransit | None = None

    # ------------------------------------------------------------ the two steps
    def _current(self) -> TxnTransit:
        return TxnTransit(self.producer_id, self.last_producer_id, self.producer_epoch, self.last_producer_epoch,
                          self.timeout_ms, self.state, frozenset(self.partitions), self.start_ms, self.last_update_ms)

    def _prepare(self, target: TxnTransit) -> TxnTransit:
        if self.pending is not None:
            raise TxnTransitionError(ErrorCode.CONCURRENT_TRANSACTIONS,
                                     f"{self.transactional_id}: {self.pending.state.display} is being written")
        if self.state not in VALID_PREVIOUS[target.state]:
            raise TxnTransitionError(ErrorCode.INVALID_TXN_STATE,
                                     f"{self.transactional_id}: {self.state.display} -> {target.state.display} "
                                     f"is not a valid transition")
        self.pending = target
        return target

    def complete(self, t: TxnTransit) -> None:
        """Apply a transit once it is durably written."""
        self.producer_id, self.last_producer_id = t.producer_id, t.last_producer_id
        self.producer_epoch, self.last_producer_epoch = t.producer_epoch, t.last_producer_epoch
        self.timeout_ms, self.state = t.timeout_ms, t.state
        self.partitions = set(t.partitions)
        self.start_ms, self.last_update_ms = t.start_ms, t.last_update_ms
        if self.pending == t:
            self.pending = None

    def abandon(self) -> None:
        """The pending write failed: the state stays as it was."""
        self.pending = None

    # ------------------------------------------------------------ transitions
    def prepare_epoch_bump(self, timeout_ms: int, now_ms: int, new_producer_id: int | None = None) -> TxnTransit:
        """InitProducerId: a new incarnation of the producer (epoch + 1, or a new producer id
        with epoch 0 when `new_producer_id` is given because the epoch is exhausted)."""
        if new_producer_id is not None:
            pid, epoch, last_pid = new_producer_id, 0, self.producer_id
        else:
            pid, epoch, last_pid = self.producer_id, self.producer_epoch + 1, self.last_producer_id
        return self._prepare(TxnTransit(pid, last_pid, epoch, self.producer_epoch, timeout_ms, TxnState.EMPTY,
                                        frozenset(), -1, now_ms))

    def prepare_fence(self) -> TxnTransit:
        """Bump the epoch of an ongoing transaction before aborting it (a timeout, or a new
        incarnation of the producer): the old incarnation's later requests are fenced. Not
        written; the abort that follows carries the new epoch."""
        epoch = self.producer_epoch if self.producer_epoch >= MAX_EPOCH else self.producer_epoch + 1
        return self._prepare(replace(self._current(), producer_epoch=epoch, last_producer_epoch=self.producer_epoch,
                                     state=TxnState.PREPARE_EPOCH_FENCE))

    def prepare_add_partitions(self, partitions: set[Partition], now_ms: int) -> TxnTransit:
        starting = self.state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)
        start = now_ms if starting else self.start_ms
        current = set() if starting else self.partitions
        return self._prepare(replace(self._current(), state=TxnState.ONGOING,
                                     partitions=frozenset(current | partitions), start_ms=start, last_update_ms=now_ms))

    def prepare_end(self, commit: bool, now_ms: int) -> TxnTransit:
        state = TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT
        return self._prepare(replace(self._current(), state=state, last_update_ms=now_ms))

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """The markers are written: CompleteCommit or CompleteAbort, partitions cleared."""
        state = TxnState.COMPLETE_COMMIT if self.state is TxnState.PREPARE_COMMIT else TxnState.COMPLETE_ABORT
        return self._prepare(replace(self._current(), state=state, partitions=frozenset(), last_update_ms=now_ms))

    def prepare_dead(self) -> TxnTransit:
        """transactional.id.expiration.ms passed: a tombstone is written."""
        return self._prepare(replace(self._current(), state=TxnState.DEAD, partitions=frozenset()))

    def apply_fence_in_memory(self) -> TxnTransit:
        """PrepareEpochFence is never written: it is applied at once and the abort follows."""
        t = self.prepare_fence()
        self.complete(t)
        return t
