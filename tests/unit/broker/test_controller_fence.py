"""The broker's fence against controller requests (praha/broker/replication/fencing.py), decisions only."""
from __future__ import annotations

from praha.broker.replication.fencing import ControllerFence, Verdict
from praha.errors import ErrorCode


def fence_knowing(controller: tuple[int, int]) -> ControllerFence:
    f = ControllerFence(broker_epoch=100)
    assert f.after_reading(*controller, seat=controller) is Verdict.ACCEPT
    assert f.settle(4, controller[1], Verdict.ACCEPT) == ErrorCode.NONE
    return f


def test_the_known_controller_is_accepted_without_reading_zookeeper():
    f = fence_knowing((1, 5))
    assert f.decide(1, 5, 100) is Verdict.ACCEPT


def test_an_older_epoch_is_stale_and_counted():
    f = fence_knowing((1, 5))
    assert f.decide(1, 4, 100) is Verdict.STALE_CONTROLLER
    assert f.settle(6, 4, Verdict.STALE_CONTROLLER) == ErrorCode.STALE_CONTROLLER_EPOCH
    assert f.refused[(6, 4)] == 1
    assert f.highest_controller_epoch == 5


def test_a_request_for_an_older_incarnation_of_the_broker_is_stale():
    f = fence_knowing((1, 5))
    assert f.decide(1, 5, 99) is Verdict.STALE_BROKER


def test_another_controller_id_or_a_higher_epoch_is_checked_against_zookeeper():
    f = fence_knowing((1, 5))
    assert f.decide(99, 5, -1) is Verdict.VERIFY
    assert f.decide(1, 2**31 - 1, -1) is Verdict.VERIFY


def test_a_forgery_zookeeper_does_not_confirm_changes_nothing():
    f = fence_knowing((1, 5))
    for cid, epoch in ((99, 5), (99, 6), (1, 2**31 - 1)):
        verdict = f.after_reading(cid, epoch, seat=(1, 5))
        assert verdict is Verdict.STALE_CONTROLLER
        assert f.settle(4, epoch, verdict) == ErrorCode.STALE_CONTROLLER_EPOCH
    assert f.highest_controller_epoch == 5
    assert f.known_controller == (1, 5)
    assert f.decide(1, 5, 100) is Verdict.ACCEPT  # the real controller is still believed


def test_a_new_controller_confirmed_by_zookeeper_becomes_the_known_one():
    f = fence_knowing((1, 5))
    assert f.after_reading(2, 6, seat=(2, 6)) is Verdict.ACCEPT
    f.settle(4, 6, Verdict.ACCEPT)
    assert f.known_controller == (2, 6)
    assert f.highest_controller_epoch == 6
    assert f.decide(1, 5, 100) is Verdict.STALE_CONTROLLER


def test_when_zookeeper_cannot_be_read_epoch_fencing_alone_decides():
    f = fence_knowing((1, 5))
    assert f.after_reading(2, 6, None, read_failed=True) is Verdict.ACCEPT
    assert f.after_reading(2, 4, None, read_failed=True) is Verdict.STALE_CONTROLLER
    assert f.known_controller == (1, 5)  # nothing learnt from an unread seat
