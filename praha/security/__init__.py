"""Security: who a connection is (TLS, SASL) and what it may do (ACLs).

`listener` builds each listener's settings (TLS context, SASL mechanisms) from the broker's
configuration; `tls` and `principal` turn a client certificate into a Kafka principal;
`sasl`, `scram`, `jaas` and `credentials` authenticate SASL clients.
"""
