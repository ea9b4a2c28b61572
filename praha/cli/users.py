"""`praha configs --entity-type users`: SCRAM credentials, as kafka-configs manages them
over ZooKeeper (`/config/users/<user>`, beside the user's quotas, and a change notice):

  praha configs --entity-type users --entity-name alice --alter \\
      --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'
  praha configs --entity-type users --entity-name alice --alter --delete-config SCRAM-SHA-512
  praha configs --entity-type users --entity-name alice --describe

The password never reaches ZooKeeper: only salt, stored key, server key and iterations.
Quota keys in the same command go to the quota path (`admin_tools._configs_quotas`).
"""
from __future__ import annotations

import argparse

from praha.cli.options import CliError, zk_session_of
from praha.protocol.scram import MIN_ITERATIONS, ScramCredential, ScramMechanism
from praha.security.credentials import alter_credentials, check_iterations, read_credentials

#: kafka-configs' default when a SCRAM config gives no iterations
DEFAULT_ITERATIONS = MIN_ITERATIONS


def _is_scram(key: str) -> bool:
    return key.strip().upper().startswith("SCRAM-")


def split_scram(add: dict[str, str], delete: list[str]
                ) -> tuple[dict[str, str], dict[str, str], list[str], list[str]]:
    """(SCRAM additions, other additions, SCRAM deletions, other deletions)."""
    return ({k: v for k, v in add.items() if _is_scram(k)}, {k: v for k, v in add.items() if not _is_scram(k)},
            [k for k in delete if _is_scram(k)], [k for k in delete if not _is_scram(k)])


def mechanism_of(key: str) -> ScramMechanism:
    m = ScramMechanism.by_name(key.strip())
    if m is None:
        raise CliError(f"unknown SCRAM mechanism {key!r}: SCRAM-SHA-256 or SCRAM-SHA-512")
    return m


def parse_scram_specs(add: dict[str, str]) -> dict[ScramMechanism, tuple[str, int]]:
    """{"SCRAM-SHA-256": "iterations=8192,password=secret"} → {mechanism: (password,
    iterations)} (CliError if malformed; iterations default to Kafka's 4096)."""
    out = {}
    for key, value in add.items():
        mechanism = mechanism_of(key)
        fields = dict(part.split("=", 1) for part in value.split(",") if "=" in part)
        unknown = set(fields) - {"iterations", "password"}
        if unknown or "password" not in fields or not fields["password"]:
            raise CliError(f"{key}: expected [iterations=N,password=SECRET], got [{value}]")
        try:
            iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
        except ValueError:
            raise CliError(f"{key}: iterations must be a number, got {fields['iterations']!r}") from None
        check_iterations(mechanism, iterations)
        out[mechanism] = (fields["password"], iterations)
    return out


def parse_scram_configs(add: dict[str, str]) -> dict[ScramMechanism, ScramCredential]:
    """{"SCRAM-SHA-256": "iterations=8192,password=secret"} → credentials (CliError if malformed)."""
    return {m: ScramCredential.from_password(m, password, iterations)
            for m, (password, iterations) in parse_scram_specs(add).items()}


def user_scram_configs(args: argparse.Namespace, user: str, add: dict[str, str], delete: list[str],
                       describe: bool = False) -> int:
    if describe:
        with zk_session_of(args) as store:
            creds = read_credentials(store, user)
        if creds:
            listed = ", ".join(f"{m.mechanism_name}=iterations={c.iterations}" for m, c in sorted(
                creds.items(), key=lambda kv: kv[0].wire_id))
            print(f"SCRAM credential configs for user-principal '{user}' are {listed}")
        return 0
    upserts = parse_scram_configs(add)
    deletions = [mechanism_of(k) for k in delete]
    with zk_session_of(args) as store:
        alter_credentials(store, user, upserts, deletions)
    print(f"Completed updating config for user {user}.")
    return 0
