"""Local multi-process clusters: an embedded ZooKeeper plus N broker processes on loopback."""
from praha.cluster.local import ClusterError, LocalCluster  # noqa: F401
