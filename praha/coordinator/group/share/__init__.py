"""KIP-932 share groups on the group coordinator: membership, member epochs and the
server-side share assignor (`assignor`, `heartbeat`: pure decisions; `service`: the groups a
coordinator holds). The share partitions themselves live on the partition leaders
(`praha.broker.share.partition`)."""
