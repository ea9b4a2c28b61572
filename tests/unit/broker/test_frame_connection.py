"""FrameConnection's framing, as asyncio drives it: bytes land in the buffer it hands out
(`get_buffer`), then `buffer_updated`. The transport is a stand-in that records pauses."""
from __future__ import annotations

import asyncio
import struct

import pytest

from praha.broker.network.socket_server import FrameConnection
from praha.errors import InvalidRequestError


class Transport:
    def __init__(self):
        self.reading = True
        self.pauses = 0
        self.closed = False

    def pause_reading(self):
        self.reading = False
        self.pauses += 1

    def resume_reading(self):
        self.reading = True

    def close(self):
        self.closed = True

    def get_extra_info(self, name):
        return ("127.0.0.1", 1)


def connection(max_frame: int = 100 << 20) -> tuple[FrameConnection, Transport]:
    conn = FrameConnection(max_frame)
    t = Transport()
    conn.connection_made(t)
    return conn, t


def feed(conn: FrameConnection, data: bytes, chunk: int) -> int:
    """Deliver `data` as the event loop would: at most `chunk` bytes per read, never more
    than the buffer offered, none while reading is paused. Returns the bytes delivered."""
    pos = 0
    while pos < len(data) and conn.transport.reading:
        buf = conn.get_buffer(-1)
        assert len(buf) > 0, "a protocol that is reading must offer room"
        n = min(chunk, len(buf), len(data) - pos)
        buf[:n] = data[pos:pos + n]
        conn.buffer_updated(n)
        pos += n
    return pos


def frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def frames_of(conn: FrameConnection, count: int) -> list[bytes]:
    async def take():
        return [bytes(await conn.next_frame()) for _ in range(count)]
    return asyncio.run(take())


@pytest.mark.parametrize("chunk", [1, 3, 4, 5, 7, 4096, 1 << 20])
def test_small_frames_split_anywhere_come_out_whole_and_in_order(chunk):
    bodies = [bytes([i]) * (i * 37 % 500) for i in range(1, 40)]
    conn, _ = connection()
    feed(conn, b"".join(frame(b) for b in bodies), chunk)
    assert frames_of(conn, len(bodies)) == bodies


def test_a_large_body_is_read_in_place_and_grows_only_as_bytes_arrive():
    body = bytes(range(256)) * (3 * 4096 + 5)  # ~3 MiB
    conn, _ = connection()
    data = frame(body)
    feed(conn, data[:200_000], 65536)
    assert conn._body is not None
    assert len(conn._body) <= FrameConnection.BODY_START_BYTES
    feed(conn, data[200_000:], 65536)
    got = frames_of(conn, 1)[0]
    assert got == body


def test_announcing_a_huge_frame_allocates_nothing_near_its_size():
    conn, _ = connection()
    feed(conn, struct.pack(">i", 90 << 20) + b"\0" * 1024, 65536)
    assert len(conn._body) <= FrameConnection.BODY_START_BYTES


def test_reading_pauses_while_a_megabyte_waits_and_resumes_when_taken():
    conn, t = connection()
    body = b"p" * (600 << 10)
    data = frame(body) + frame(body)
    sent = feed(conn, data, 65536)
    assert not t.reading
    assert sent < len(data)  # 600 KiB queued + 424 KiB of the next body
    assert frames_of(conn, 1) == [body]
    assert t.reading
    assert feed(conn, data[sent:], 65536) == len(data) - sent
    assert frames_of(conn, 1) == [body]


def test_a_large_frame_behind_a_waiting_one_is_not_read_ahead_whole():
    conn, t = connection()
    waiting = frame(b"w" * 900_000)
    huge = frame(b"h" * (50 << 20))
    sent = feed(conn, waiting + huge, 1 << 20)
    assert not t.reading
    assert sent - len(waiting) < 2 << 20  # of the 50 MiB body, about 150 KB were read
    assert len(conn._body) <= 4 * (sent - len(waiting))


def test_a_refused_size_ends_the_connection_after_the_frames_before_it():
    conn, t = connection(max_frame=1 << 20)
    feed(conn, frame(b"one") + frame(b"two") + struct.pack(">i", -1), 4096)
    assert not t.reading

    async def take():
        got = [bytes(await conn.next_frame()), bytes(await conn.next_frame())]
        with pytest.raises(InvalidRequestError):
            await conn.next_frame()
        return got
    assert asyncio.run(take()) == [b"one", b"two"]


def test_the_peer_leaving_ends_the_stream_after_its_complete_frames():
    conn, _ = connection()
    feed(conn, frame(b"last") + struct.pack(">i", 10) + b"cut", 4096)
    conn.eof_received()

    async def take():
        return bytes(await conn.next_frame()), await conn.next_frame()
    assert asyncio.run(take()) == (b"last", None)


def test_bodies_are_writable_and_owned_by_their_request():
    conn, _ = connection()
    data = frame(b"a" * 10) + frame(b"b" * (2 << 20))
    sent = feed(conn, data, 65536)

    async def take():
        small = await conn.next_frame()
        feed(conn, data[sent:], 65536)  # the rest arrives once the first request is taken
        return small, await conn.next_frame()
    small, large = asyncio.run(take())
    assert isinstance(small, bytearray)
    assert isinstance(large, bytearray)
    small[0:1] = b"Z"  # stamping one request's bytes cannot touch the next one's
    assert bytes(large[:1]) == b"b"


def test_a_half_closed_peer_still_gets_its_answers():
    conn, t = connection()
    feed(conn, frame(b"last request"), 4096)
    assert conn.eof_received() is True  # keep the transport open for writing
    assert not t.closed

    async def take():
        return bytes(await conn.next_frame()), await conn.next_frame()
    assert asyncio.run(take()) == (b"last request", None)
