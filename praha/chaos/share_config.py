"""What the share-group workload (`--workload share`) runs on, declared once: its group and
topic, how many members, and the brokers' share-group settings of such a campaign (the
environment applies them; the judge reads the delivery count limit from here)."""
from __future__ import annotations

SHARE_GROUP = "chaos-share"
SHARE_TOPIC = "chaos-share-0"
SHARE_PARTITIONS = 2
SHARE_MEMBERS = 4
RECORDS_PER_SECOND = 40
DELIVERY_LIMIT = 4
LOCK_MS = 5000

#: a short acquisition lock and session, so a killed member's records and membership come back
#: within the campaign; earliest, so the group reads what was written before its first member joined
BROKER_SETTINGS = {
    "share.auto.offset.reset": "earliest",
    "group.share.record.lock.duration.ms": str(LOCK_MS),
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.delivery.count.limit": str(DELIVERY_LIMIT),
    "group.share.heartbeat.interval.ms": "500",
    "group.share.session.timeout.ms": "6000",
}
