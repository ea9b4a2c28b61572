"""`praha groups --describe --members --verbose` for a KIP-848 group: each member's current epoch
and assignment beside the group's target epoch and the member's target assignment (Kafka 4's
columns); a classic group keeps its one ASSIGNMENT column."""
from __future__ import annotations

from praha.admin.group_plans import MemberInfo, members_table
from praha.common import TopicPartition


def test_consumer_group_members_show_current_and_target_epochs_and_assignments():
    moving = MemberInfo("m-1", "c1", "/127.0.0.1", None, (TopicPartition("orders", 0),), member_epoch=4,
                        target=(TopicPartition("orders", 0), TopicPartition("orders", 1)))
    lines = members_table("g", [moving], verbose=True, target_epoch=5)
    assert lines[0].split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                                "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"]
    assert lines[1].split() == ["g", "m-1", "/127.0.0.1", "c1", "1", "4", "orders(0)", "5", "orders(0,1)"]
    classic = members_table("g", [MemberInfo("m-2", "c2", "/h", None, (TopicPartition("orders", 2),))], verbose=True)
    assert classic[0].split()[-1] == "ASSIGNMENT"
    assert classic[1].split()[-1] == "orders(2)"
