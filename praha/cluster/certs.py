"""A local certificate authority for secure clusters and tests (with `cryptography`).

`make_ca(dir)` writes `ca.pem` (the trust store) and keeps the CA key; `issue(ca, dir,
name, cn, hosts)` writes `<name>.pem`: the private key and the certificate chain in one
PEM file, which is what Kafka's `ssl.keystore.type=PEM` + `ssl.keystore.location` read
(and also `<name>.key` / `<name>.crt` for clients that want them apart, as librdkafka).
"""
from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class CertificateAuthority:
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey
    path: Path  # ca.pem


@dataclass(frozen=True)
class IssuedCertificate:
    keystore: Path  # key + certificate chain (Kafka's PEM key store)
    key: Path
    cert: Path


def _name(cn: str, ou: str = "") -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, "praha")]
    if ou:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, ou))
    attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn))
    return x509.Name(attrs)


def make_ca(directory: Path, cn: str = "praha local CA", days: int = 3650) -> CertificateAuthority:
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(_name(cn)).issuer_name(_name(cn)).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    path = directory / "ca.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return CertificateAuthority(cert, key, path)


def issue(ca: CertificateAuthority, directory: Path, name: str, cn: str,
          hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
          ou: str = "", days: int = 825) -> IssuedCertificate:
    """A certificate for `cn` (server and client use) valid for `hosts` (IPs or DNS names)."""
    directory.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    alt_names: list[x509.GeneralName] = []
    for h in hosts:
        try:
            alt_names.append(x509.IPAddress(ipaddress.ip_address(h)))
        except ValueError:
            alt_names.append(x509.DNSName(h))
    builder = (x509.CertificateBuilder().subject_name(_name(cn, ou)).issuer_name(ca.cert.subject)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]),
                              critical=False))
    if alt_names:
        builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
    cert = builder.sign(ca.key, hashes.SHA256())
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    out = IssuedCertificate(directory / f"{name}.pem", directory / f"{name}.key", directory / f"{name}.crt")
    for path, data in ((out.keystore, key_pem + cert_pem), (out.key, key_pem), (out.cert, cert_pem)):
        path.write_bytes(data)
        path.chmod(0o600)
    return out
