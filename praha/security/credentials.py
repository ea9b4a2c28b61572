"""SCRAM credentials in ZooKeeper, exactly as Kafka keeps them.

`/config/users/<user>`: {"version":1,"config":{"SCRAM-SHA-256":"salt=…,stored_key=…,
server_key=…,iterations=…"}} (beside any quota settings of the same user, which are
kept); every change is followed by a notice `/config/changes/config_change_<seq>`
{"version":2,"entity_path":"users/<user>"}. Brokers read a user's credential when one
authenticates, so a change is effective for the next connection.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping

from praha.errors import ConfigError, PrahaError
from praha.protocol.scram import MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential, ScramMechanism
from praha.zk import znodes as zn
from praha.zk.ops import CreateOp, SetDataOp, WriteOutcome
from praha.zk.store import ZkStore

USERS_PATH = f"{zn.CONFIG_PATH}/users"


def user_path(user: str) -> str:
    return f"{USERS_PATH}/{user}"


def read_user_config(store: ZkStore, user: str) -> dict[str, str]:
    got = store.get_data(user_path(user))
    return {} if got is None else zn.decode_config(got[0], user_path(user))


def read_credentials(store: ZkStore, user: str) -> dict[ScramMechanism, ScramCredential]:
    out = {}
    for key, value in read_user_config(store, user).items():
        mechanism = ScramMechanism.by_name(key)
        if mechanism is not None:
            out[mechanism] = ScramCredential.from_config(value)
    return out


def scram_users(store: ZkStore) -> dict[str, dict[ScramMechanism, ScramCredential]]:
    """Every user with at least one SCRAM credential."""
    out = {}
    for user in store.get_children(USERS_PATH) or []:
        creds = read_credentials(store, user)
        if creds:
            out[user] = creds
    return out


def check_iterations(mechanism: ScramMechanism, iterations: int) -> None:
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ConfigError(f"{mechanism.mechanism_name}: iterations must be between {MIN_ITERATIONS} and "
                          f"{MAX_ITERATIONS}, got {iterations}")


def alter_credentials(store: ZkStore, user: str, upserts: Mapping[ScramMechanism, ScramCredential],
                      deletions: Iterable[ScramMechanism]) -> None:
    """Set and remove `user`'s credentials (other settings of the user stay), then notify."""
    config = read_user_config(store, user)
    for mechanism in deletions:
        config.pop(mechanism.mechanism_name, None)
    for mechanism, credential in upserts.items():
        check_iterations(mechanism, credential.iterations)
        config[mechanism.mechanism_name] = credential.to_config()
    path, data = user_path(user), zn.encode_config(config)
    store.ensure_paths([USERS_PATH, zn.CONFIG_CHANGES_PATH])
    result = store.multi([SetDataOp(path, data)])[0]
    if result.outcome is WriteOutcome.NO_NODE:
        result = store.multi([CreateOp(path, data)])[0]
    if not result.ok:
        raise PrahaError(f"could not write {path}: {result.outcome.value}")
    store.multi([CreateOp(f"{zn.CONFIG_CHANGES_PATH}/{zn.CONFIG_CHANGE_PREFIX}",
                          zn.encode_config_change(f"users/{user}"), sequential=True)])
