"""The replicas this broker hosts: the replica manager, partitions, follower fetchers,
parked requests, moves between log dirs, controller fencing and the metadata cache."""
