"""`praha configs --entity-type users`: SCRAM credentials, as kafka-configs manages them
over ZooKeeper (`/config/users/<user>` and a change notice):

  praha configs --entity-type users --entity-name alice --alter \\
      --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]'
  praha configs --entity-type users --entity-name alice --alter --delete-config SCRAM-SHA-512
  praha configs --entity-type users --entity-name alice --describe

The password never reaches ZooKeeper: only salt, stored key, server key and iterations.
"""
from __future__ import annotations

import argparse

from praha.cli.options import CliError, zookeeper_of
from praha.protocol.scram import MIN_ITERATIONS, ScramCredential, ScramMechanism
from praha.security.credentials import alter_credentials, check_iterations, read_credentials

#: kafka-configs' default when a SCRAM config gives no iterations
DEFAULT_ITERATIONS = MIN_ITERATIONS


def _mechanism(key: str) -> ScramMechanism:
    m = ScramMechanism.by_name(key.strip())
    if m is None:
        raise CliError(f"users configs here are SCRAM credentials: SCRAM-SHA-256 or SCRAM-SHA-512, not {key!r}")
    return m


def parse_scram_configs(add: dict[str, str]) -> dict[ScramMechanism, ScramCredential]:
    """{"SCRAM-SHA-256": "iterations=8192,password=secret"} → credentials (CliError if malformed)."""
    out = {}
    for key, value in add.items():
        mechanism = _mechanism(key)
        fields = dict(part.split("=", 1) for part in value.split(",") if "=" in part)
        unknown = set(fields) - {"iterations", "password"}
        if unknown or "password" not in fields or not fields["password"]:
            raise CliError(f"{key}: expected [iterations=N,password=SECRET], got [{value}]")
        try:
            iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
        except ValueError:
            raise CliError(f"{key}: iterations must be a number, got {fields['iterations']!r}") from None
        check_iterations(mechanism, iterations)
        out[mechanism] = ScramCredential.from_password(mechanism, fields["password"], iterations)
    return out


def cmd_user_configs(args: argparse.Namespace) -> int:
    from praha.admin.configs import parse_config_list
    from praha.admin.status import zk_session

    user = args.entity_name
    if args.entity_default or not user:
        raise CliError("--entity-type users needs --entity-name USER (SCRAM credentials are per user)")
    if args.describe:
        if args.add_config or args.delete_config:
            raise CliError("--add-config and --delete-config go with --alter")
        with zk_session(zookeeper_of(args)) as store:
            creds = read_credentials(store, user)
        listed = ", ".join(f"{m.mechanism_name}=iterations={c.iterations}" for m, c in sorted(
            creds.items(), key=lambda kv: kv[0].wire_id))
        print(f"SCRAM credential configs for user-principal '{user}' are {listed}")
        return 0
    upserts = parse_scram_configs(parse_config_list(args.add_config))
    deletions = [_mechanism(k) for k in args.delete_config.split(",") if k.strip()]
    if not upserts and not deletions:
        raise CliError("--alter needs --add-config or --delete-config")
    with zk_session(zookeeper_of(args)) as store:
        alter_credentials(store, user, upserts, deletions)
    print(f"Completed updating config for user {user}.")
    return 0
