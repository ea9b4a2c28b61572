"""The broker's network: the socket server and its connections, authentication of a new
connection, connection limits, and muting a throttled client's connection."""
