"""SCRAM against RFC 7677's SCRAM-SHA-256 example, and both sides of praha's exchange."""
import base64

import pytest

from praha.protocol.scram import ScramClient, ScramCredential, ScramError, ScramMechanism
from praha.security.scram_server import ScramServer

# RFC 7677 §3
USER, PASSWORD = "user", "pencil"
CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FINAL = ("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
SERVER_FIRST = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"


def test_rfc7677_client():
    client = ScramClient(ScramMechanism.SHA_256, USER, PASSWORD, nonce=CLIENT_NONCE)
    assert client.first() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    assert client.final(SERVER_FIRST.encode()).decode() == CLIENT_FINAL
    client.verify(SERVER_FINAL.encode())


def test_rfc7677_server():
    credential = ScramCredential.from_password(ScramMechanism.SHA_256, PASSWORD, 4096, salt=SALT)
    server = ScramServer(ScramMechanism.SHA_256, nonce=SERVER_NONCE)
    assert server.receive_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO") == "user"
    assert server.server_first(credential).decode() == SERVER_FIRST
    assert server.receive_final(CLIENT_FINAL.encode()).decode() == SERVER_FINAL


@pytest.mark.parametrize("mechanism", list(ScramMechanism))
def test_exchange_and_wrong_password(mechanism):
    credential = ScramCredential.from_password(mechanism, "secret", 4096)
    for password, ok in (("secret", True), ("wrong", False)):
        client, server = ScramClient(mechanism, "alice", password), ScramServer(mechanism)
        server.receive_first(client.first())
        final = client.final(server.server_first(credential))
        if ok:
            client.verify(server.receive_final(final))
        else:
            with pytest.raises(ScramError):
                server.receive_final(final)


def test_unknown_user_fails_only_at_the_proof():
    client, server = ScramClient(ScramMechanism.SHA_512, "nobody", "x"), ScramServer(ScramMechanism.SHA_512)
    server.receive_first(client.first())
    final = client.final(server.server_first(None))  # a made-up challenge, same shape
    with pytest.raises(ScramError):
        server.receive_final(final)


def test_channel_binding_refused():
    with pytest.raises(ScramError):
        ScramServer(ScramMechanism.SHA_256).receive_first(b"p=tls-unique,,n=user,r=abc")


def test_credential_round_trips_kafkas_format():
    credential = ScramCredential.from_password(ScramMechanism.SHA_512, "pw", 8192)
    text = credential.to_config()
    assert text.startswith("salt=")
    assert ",stored_key=" in text
    assert ",server_key=" in text
    assert text.endswith(",iterations=8192")
    assert ScramCredential.from_config(text) == credential


def test_librdkafka_repeated_client_nonce_is_accepted_as_kafka_does():
    """librdkafka < 2.6.1 sends r=<client nonce><server's r>; Kafka 3.8.1+ checks endsWith."""
    credential = ScramCredential.from_password(ScramMechanism.SHA_256, PASSWORD, 4096, salt=SALT)
    server = ScramServer(ScramMechanism.SHA_256, nonce=SERVER_NONCE)
    server.receive_first(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    server_first = server.server_first(credential).decode()
    nonce = CLIENT_NONCE + CLIENT_NONCE + SERVER_NONCE
    without_proof = f"c=biws,r={nonce}"
    from praha.protocol.scram import client_proof
    salted = ScramMechanism.SHA_256.salted_password(PASSWORD, SALT, 4096)
    auth = f"n=user,r={CLIENT_NONCE},{server_first},{without_proof}".encode()
    proof = base64.b64encode(client_proof(ScramMechanism.SHA_256, salted, auth)).decode()
    assert server.receive_final(f"{without_proof},p={proof}".encode()).startswith(b"v=")
    with pytest.raises(ScramError):  # a nonce that does not end with the server's is still refused
        ScramServer(ScramMechanism.SHA_256).receive_final(f"c=biws,r={CLIENT_NONCE},p={proof}".encode())
