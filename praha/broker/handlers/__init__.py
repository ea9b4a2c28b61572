"""The request handlers, one module per API family, and the one table that routes to them
(`routes.py`): each request is checked against its route's ACLs (`authorization.py`) and
sees the broker only through `broker_api.Broker`."""
