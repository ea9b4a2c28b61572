"""Reusable test harness: an embedded ZooKeeper per test run, unique chroots, a cuttable TCP proxy."""
from praha.testing.proxy import TcpProxy
from praha.testing.zookeeper import delete_chroot, embedded_zookeeper, unique_chroot

__all__ = ["TcpProxy", "delete_chroot", "embedded_zookeeper", "unique_chroot"]
