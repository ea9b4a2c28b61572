"""ZooKeeper's multi-read request (OpCode 22, ZooKeeper 3.6+), which kazoo lacks.

One request carries many getData/getChildren operations and one response returns all
their results, each with its own error code (unlike a write transaction, one missing
node does not fail the others). Measured here: ~170k getData/s from one kazoo client in
batches of 500, against ~7k/s for pipelined single getData calls — the client's
per-request cost, not the server, is the wall.

Flow of one call (`multi_read_async`):
  1. chroot-prefix the paths (`chroot.chrooted`), build a `MultiRead` request (multi
     headers + path + watch=0);
  2. hand it to kazoo's connection queue through `client._call` (the same entry kazoo's own
     requests use; kazoo routes the response to `MultiRead.deserialize`);
  3. the async result yields one item per operation: `(data, ZnodeStat)` for getData, a
     list of child names for getChildren, or a kazoo exception instance (e.g. NoNodeError).
"""
from __future__ import annotations

from collections import namedtuple
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import (
    int_struct,
    multiheader_struct,
    read_string,
    stat_struct,
    write_string,
)
from kazoo.protocol.states import ZnodeStat

from praha.zk.chroot import chrooted

MULTI_READ_OPCODE = 22
GET_DATA_OPCODE = 4
GET_CHILDREN_OPCODE = 8
_ERROR_OPCODE = -1
_NO_WATCH = b"\x00"


class MultiRead(namedtuple("MultiRead", "operations")):
    """`operations`: a list of (opcode, absolute path); opcode is GET_DATA or GET_CHILDREN."""

    type = MULTI_READ_OPCODE

    def serialize(self) -> bytearray:
        b = bytearray()
        for opcode, path in self.operations:
            b += multiheader_struct.pack(opcode, False, -1)
            b += write_string(path)
            b += _NO_WATCH
        b += multiheader_struct.pack(-1, True, -1)
        return b

    @classmethod
    def deserialize(cls, buf: bytes, offset: int) -> list[Any]:
        results: list[Any] = []
        header_size = multiheader_struct.size
        while True:
            opcode, done, _err = multiheader_struct.unpack_from(buf, offset)
            offset += header_size
            if done:
                return results
            if opcode == _ERROR_OPCODE:
                code = int_struct.unpack_from(buf, offset)[0]
                offset += 4
                results.append(EXCEPTIONS[code]())
            elif opcode == GET_DATA_OPCODE:
                length = int_struct.unpack_from(buf, offset)[0]
                offset += 4
                data = b"" if length < 0 else bytes(buf[offset:offset + length])
                offset += max(length, 0)
                results.append((data, ZnodeStat._make(stat_struct.unpack_from(buf, offset))))
                offset += stat_struct.size
            elif opcode == GET_CHILDREN_OPCODE:
                count = int_struct.unpack_from(buf, offset)[0]
                offset += 4
                children = []
                for _ in range(max(count, 0)):
                    child, offset = read_string(buf, offset)
                    children.append(child)
                results.append(children)
            else:
                raise ValueError(f"unexpected opcode {opcode} in a multi-read response")


def multi_read_async(client: KazooClient, operations: list[tuple[int, str]]) -> Any:
    """Send one multi-read; returns kazoo's IAsyncResult (its value: one result per operation)."""
    async_result = client.handler.async_result()
    request = MultiRead([(op, chrooted(client, path)) for op, path in operations])
    client._call(request, async_result)
    return async_result


def server_supports_multi_read(version: tuple[int, ...]) -> bool:
    return version >= (3, 6)
