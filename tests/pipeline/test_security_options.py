"""Security and trigger options of the praha data source, without Spark or a cluster:
Spark's `kafka.security.protocol` / `kafka.sasl.*` / `kafka.ssl.*` names parsed, bad ones
refused naming the option and never echoing a secret; `minOffsetsPerTrigger` /
`maxTriggerDelay`; the group-id options."""
from __future__ import annotations

import pickle
import ssl

import pytest
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, load_pem_private_key, pkcs12
from cryptography.x509 import load_pem_x509_certificate

from praha.cluster.certs import issue, make_ca
from praha.spark.options import OptionError, parse_duration_ms, parse_read_options, parse_write_options
from praha.spark.planning import delay_batch
from praha.spark.security import parse_jaas, parse_security

SECRET = "s3cr3t-Pa55word"
SCRAM = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="spark" password="{SECRET}";'
BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    ca = make_ca(d)
    client = issue(ca, d, "client", "spark-client")
    key = load_pem_private_key(client.key.read_bytes(), None)
    cert = load_pem_x509_certificate(client.cert.read_bytes())
    (d / "client.p12").write_bytes(pkcs12.serialize_key_and_certificates(
        b"c", key, cert, [ca.cert], BestAvailableEncryption(b"store-pass")))  # type: ignore[arg-type]
    (d / "trust.p12").write_bytes(pkcs12.serialize_key_and_certificates(
        b"t", None, None, [ca.cert], BestAvailableEncryption(b"trust-pass")))
    (d / "store.jks").write_bytes(b"\xfe\xed\xfe\xed" + b"\0" * 60)
    return d, ca, client


def refused(options: dict[str, str], option: str, *secrets: str) -> str:
    """The parse fails naming `option`, and no secret appears in the message."""
    for parse in (parse_read_options, parse_write_options):
        with pytest.raises(OptionError) as e:
            parse({**BASE, **options})
        assert e.value.option == option, str(e.value)
        for s in secrets:
            assert s not in str(e.value)
    return str(e.value)


def test_jaas_strings_as_users_write_them():
    assert parse_jaas(SCRAM, "SCRAM-SHA-512") == ("spark", SECRET)
    plain = 'org.apache.kafka.common.security.plain.PlainLoginModule required\n  username=alice\n  password="p w\\"q";'
    assert parse_jaas(plain, "PLAIN") == ("alice", 'p w"q')


@pytest.mark.parametrize(("options", "option"), [
    ({"kafka.security.protocol": "SASL_TLS"}, "kafka.security.protocol"),
    ({"kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "SCRAM-SHA-512"}, "kafka.sasl.jaas.config"),
    ({"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "SCRAM-SHA-512",
      "kafka.sasl.jaas.config": f'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" '
                                f'token="{SECRET}";'}, "kafka.sasl.jaas.config"),
    ({"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config": SCRAM},
     "kafka.sasl.jaas.config"),
    ({"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.jaas.config": SCRAM}, "kafka.sasl.mechanism"),
    ({"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "OAUTHBEARER",
      "kafka.sasl.jaas.config": SCRAM}, "kafka.sasl.mechanism"),
    ({"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": "/nonexistent/ca.pem"},
     "kafka.ssl.truststore.location"),
    ({"kafka.security.protocol": "SSL", "kafka.ssl.endpoint.identification.algorithm": "dns"},
     "kafka.ssl.endpoint.identification.algorithm"),
])
def test_bad_security_options_fail_naming_the_option_without_the_secret(options, option):
    refused(options, option, SECRET)


def test_stores(pki):
    d, ca, client = pki
    pem = parse_security({"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": str(ca.path),
                          "kafka.ssl.keystore.location": str(client.keystore)})
    assert pem.truststore is not None
    assert pem.truststore.kind == "PEM"
    assert pem.keystore is not None
    assert isinstance(pem.client_security().ssl_context, ssl.SSLContext)
    rd = pem.librdkafka()
    assert "BEGIN CERTIFICATE" in rd["ssl.ca.pem"]
    assert "PRIVATE KEY" in rd["ssl.key.pem"]
    p12 = parse_security({"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": str(d / "trust.p12"),
                          "kafka.ssl.truststore.type": "PKCS12", "kafka.ssl.truststore.password": "trust-pass",
                          "kafka.ssl.keystore.location": str(d / "client.p12"),
                          "kafka.ssl.keystore.password": "store-pass"})
    assert p12.keystore is not None
    assert p12.keystore.kind == "PKCS12"
    assert p12.client_security().ssl_context is not None
    assert p12.librdkafka()["ssl.keystore.location"] == str(d / "client.p12")
    assert "BEGIN CERTIFICATE" in p12.librdkafka()["ssl.ca.pem"]
    # the wrong store password fails now, naming the password option, not echoing it
    refused({"kafka.security.protocol": "SSL", "kafka.ssl.keystore.location": str(d / "client.p12"),
             "kafka.ssl.keystore.password": "Wrong-" + SECRET}, "kafka.ssl.keystore.password", SECRET)
    # JKS: refused with the keytool command that converts it
    msg = refused({"kafka.security.protocol": "SSL", "kafka.ssl.truststore.location": str(d / "store.jks")},
                  "kafka.ssl.truststore.location")
    assert "keytool -importkeystore" in msg
    assert "PKCS12" in msg


def test_secrets_stay_out_of_repr_and_pickles_carry_no_ssl_context():
    opts = parse_read_options({**BASE, "kafka.security.protocol": "SASL_PLAINTEXT",
                               "kafka.sasl.mechanism": "SCRAM-SHA-512", "kafka.sasl.jaas.config": SCRAM})
    assert opts.security.username == "spark"
    assert opts.security.password == SECRET
    assert SECRET not in repr(opts)
    assert pickle.loads(pickle.dumps(opts)) == opts  # strings only: executors rebuild TLS themselves
    w = parse_write_options({**BASE, "topic": "t", "kafka.security.protocol": "SASL_PLAINTEXT",
                             "kafka.sasl.mechanism": "SCRAM-SHA-512", "kafka.sasl.jaas.config": SCRAM})
    assert SECRET not in repr(w)
    assert not any("jaas" in k for k in w.producer_config)  # a Java-only name never reaches librdkafka
    from praha.spark.writer import producer_config

    conf = producer_config(w)
    assert conf["sasl.username"] == "spark"
    assert conf["sasl.mechanism"] == "SCRAM-SHA-512"


def test_min_offsets_per_trigger_and_max_trigger_delay():
    opts = parse_read_options({**BASE, "minOffsetsPerTrigger": "100", "maxTriggerDelay": "2s"}, streaming=True)
    assert (opts.min_offsets_per_trigger, opts.max_trigger_delay_ms) == (100, 2000)
    assert parse_read_options(BASE, streaming=True).max_trigger_delay_ms == 15 * 60 * 1000
    assert [parse_duration_ms("d", t) for t in ("250", "250ms", "3 s", "15m", "1h")] == \
        [250, 250, 3000, 900_000, 3_600_000]
    for bad, option in (({"maxTriggerDelay": "soon"}, "maxTriggerDelay"),
                        ({"minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": "5"}, "minOffsetsPerTrigger")):
        with pytest.raises(OptionError) as e:
            parse_read_options({**BASE, **bad})
        assert e.value.option == option
    assert not delay_batch(5, 100, float("inf"), 2000)  # the first batch is never held
    assert delay_batch(99, 100, 1999, 2000)
    assert not delay_batch(100, 100, 10, 2000)
    assert not delay_batch(0, 100, 2000, 2000)  # the delay is up: go with what there is
    assert not delay_batch(0, None, 0, 2000)


def test_group_id_options_name_the_client():
    assert parse_read_options({**BASE, "kafka.group.id": "etl"}).client_id == "etl"
    assert parse_read_options({**BASE, "groupIdPrefix": "etl"}).client_id == "etl-praha-spark"
    assert parse_read_options({**BASE, "kafka.client.id": "c", "kafka.group.id": "etl"}).client_id == "c"
    with pytest.raises(OptionError):
        parse_read_options({**BASE, "kafka.group.id": " "})
