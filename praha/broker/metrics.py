"""Prometheus figures for one broker process, computed at scrape time.

A custom collector reads the controller's figures and the broker's counters when
Prometheus (or `praha cluster status`) scrapes `/metrics`; nothing is updated on the hot
path. Names follow Kafka's MBeans loosely: `praha_controller_active` is
ActiveControllerCount, `praha_controller_offline_partitions` OfflinePartitionsCount, etc.
"""
from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

if TYPE_CHECKING:
    from praha.broker.handlers.broker_api import Broker

log = logging.getLogger(__name__)

_CONTROLLER_HELP = {
    "active_controller": "1 if this broker is the active controller",
    "controller_epoch": "controller epoch (this controller's, or the highest seen)",
    "event_queue_size": "events waiting in the controller's queue",
    "event_queue_time_last_s": "queue time of the last processed controller event",
    "event_queue_time_max_s": "largest queue time of any controller event",
    "offline_partitions": "partitions without a live leader (active controller only)",
    "preferred_replica_imbalance": "partitions not led by their preferred replica",
    "partitions_being_reassigned": "partitions with a reassignment in flight",
    "topics_to_delete": "topics queued for deletion",
    "topics_ineligible_to_delete": "topics whose deletion waits",
    "last_failover_seconds": "duration of this broker's last controller failover",
    "global_partition_count": "partitions known to the active controller",
}
_COUNTERS = {"events_processed", "failovers", "unclean_leader_elections"}
#: Kafka's quota type names (the `quota_type` label)
_QUOTA_TYPE_NAMES = {"PRODUCE": "Produce", "FETCH": "Fetch", "REQUEST": "Request"}


class BrokerCollector:
    def __init__(self, broker: Broker):
        self.broker = broker

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        b = self.broker
        if b.controller is not None:
            for name, value in b.controller.figures().items():
                metric = f"praha_controller_{name}"
                if name in _COUNTERS:
                    c = CounterMetricFamily(metric, name.replace("_", " "))
                    c.add_metric([], value)
                    yield c
                else:
                    g = GaugeMetricFamily(metric, _CONTROLLER_HELP.get(name, name.replace("_", " ")))
                    g.add_metric([], value)
                    yield g
        for name, value, doc in b.broker_figures():
            g = GaugeMetricFamily(f"praha_broker_{name}", doc)
            g.add_metric([], value)
            yield g
        throttled = CounterMetricFamily("praha_client_quota_throttled",
                                        "responses throttled for a client over its quota (Kafka's throttle-time count)",
                                        labels=["quota_type"])
        throttle_ms = CounterMetricFamily("praha_client_quota_throttle_time_ms",
                                          "total throttle time given to clients over their quota",
                                          labels=["quota_type"])
        for m in b.client_quotas.managers():
            kind = _QUOTA_TYPE_NAMES[m.quota_type.name]
            throttled.add_metric([kind], m.stats.throttled)
            throttle_ms.add_metric([kind], m.stats.throttle_time_ms)
        yield throttled
        yield throttle_ms
        lm = b.replica_manager.log_manager
        cleaner = lm.cleaner if lm is not None else None
        if cleaner is not None:
            g = GaugeMetricFamily("praha_log_cleaner_dirty_ratio",
                                  "dirty bytes / total bytes of each compacted log (Kafka's cleanable ratio)",
                                  labels=["topic", "partition"])
            for tp, ratio in sorted(cleaner.dirty_ratios.items()):
                g.add_metric([tp.topic, str(tp.partition)], ratio)
            yield g
        loads = b.group_coordinator.stats.load_time_ms
        if loads:
            g = GaugeMetricFamily("praha_group_coordinator_load_time_ms",
                                  "the last load of each __consumer_offsets partition this broker coordinates",
                                  labels=["partition"])
            for partition, ms in sorted(loads.items()):
                g.add_metric([str(partition)], ms)
            yield g


def start_metrics_server(broker: Broker, host: str, port: int) -> tuple[object, int]:
    """Serve /metrics on `port`; if it is taken, on any free port (logged) rather than not start."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(BrokerCollector(broker))
    try:
        server, _thread = start_http_server(port, addr=host, registry=registry)
    except OSError as e:
        if port == 0:
            raise
        log.warning("metrics port %d unavailable (%s); using a free port instead", port, e.strerror)
        server, _thread = start_http_server(0, addr=host, registry=registry)
    return server, server.server_address[1]
