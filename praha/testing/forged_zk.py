"""The ZooKeeper writes that would take a cluster over, tried by a client without the
brokers' identity: one table for the tests and the chaos fault `forged_zk_write`.

Each must be refused with NoAuth on a secured tree. `try_forged_writes` answers, per write,
"NoAuth" or what happened instead ("ACCEPTED", or the error's name), and the znodes an
accepted create left behind (to be removed with the brokers' identity)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NoAuthError

REFUSED = "NoAuth"


def forged_writes(topic: str, tag: str) -> dict[str, tuple[Callable[[KazooClient], Any], str | None]]:
    """What → (the write, the znode it creates or None); `topic` an existing topic, `tag` a fresh
    name. Creates under a parent that may be missing make it first: NoAuth at whichever level."""
    return {
        "create a topic": (lambda k: k.create(f"/brokers/topics/{tag}", b'{"version":1,"partitions":{"0":[1]}}'),
                           f"/brokers/topics/{tag}"),
        "queue a topic deletion": (lambda k: k.create(f"/admin/delete_topics/{topic}"),
                                   f"/admin/delete_topics/{topic}"),
        "queue a reassignment": (lambda k: k.create("/admin/reassign_partitions", b'{"version":1,"partitions":[]}'),
                                 "/admin/reassign_partitions"),
        "grant an ACL": (lambda k: k.create(f"/kafka-acl/Topic/{tag}", b'{"version":1,"acls":[]}',
                                                  makepath=True),
                         f"/kafka-acl/Topic/{tag}"),
        "add a SCRAM user": (lambda k: k.create(f"/config/users/{tag}", b'{"version":1,"config":{}}',
                                                      makepath=True),
                             f"/config/users/{tag}"),
        "claim the controller seat": (lambda k: k.create("/controller", b'{"version":1,"brokerid":99,"timestamp":"0"}',
                                                         ephemeral=True), None),
        "bump the controller epoch": (lambda k: k.set("/controller_epoch", b"2147483646"), None),
        "rewrite a topic": (lambda k: k.set(f"/brokers/topics/{topic}", b"{}"), None),
        "deregister a broker": (lambda k: k.delete("/brokers/ids/1"), None),
    }


def try_forged_writes(client: KazooClient, topic: str, tag: str) -> tuple[dict[str, str], list[str]]:
    answers: dict[str, str] = {}
    created: list[str] = []
    for what, (write, path) in forged_writes(topic, tag).items():
        try:
            write(client)
            answers[what] = "ACCEPTED"
            if path is not None:
                created.append(path)
        except NoAuthError:
            answers[what] = REFUSED
        except KazooException as e:
            answers[what] = type(e).__name__
    return answers, created


def outsider(connect: str, **tls: Any) -> KazooClient:
    """A started ZooKeeper client with no login (`tls`: kazoo's use_ssl/ca/... to reach a TLS port)."""
    k = KazooClient(hosts=connect, timeout=10, **tls)
    k.start(15)
    return k
