"""What one broker, and only that broker, says about a topic: a Metadata request (v4)
written on a socket to that address.

Every Kafka client asks whichever broker it likes for metadata, and a broker applies the
controller's records a moment after the controller commits them. A test that creates a
topic and must know that every broker already serves it has to ask each one itself."""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass

_METADATA, _VERSION = 3, 4  # Kafka 4 answers Metadata v4 and later


@dataclass(frozen=True)
class PartitionView:
    error: int
    leader: int
    isr: tuple[int, ...]


def topic_partitions(address: str, topic: str, timeout: float = 10) -> dict[int, PartitionView]:
    """The partitions `address` serves for `topic`; empty when it does not know the topic."""
    host, port = address.rsplit(":", 1)
    name = topic.encode()
    client = b"kafka-retention-tests"
    body = (
        struct.pack(">hhih", _METADATA, _VERSION, 1, len(client))
        + client
        + struct.pack(">ih", 1, len(name))
        + name
        + b"\x00"  # allow_auto_topic_creation: false
    )
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(struct.pack(">i", len(body)) + body)
        (size,) = struct.unpack(">i", _read(sock, 4))
        reply = _Reader(_read(sock, size))
    reply.int32()  # correlation id
    reply.int32()  # throttle time
    for _ in range(reply.int32()):  # brokers
        reply.int32()
        reply.string()
        reply.int32()
        reply.string()
    reply.string()  # cluster id
    reply.int32()  # controller id
    out: dict[int, PartitionView] = {}
    for _ in range(reply.int32()):
        topic_error = reply.int16()
        found = reply.string()
        reply.int8()  # is_internal
        for _ in range(reply.int32()):
            error, index, leader = reply.int16(), reply.int32(), reply.int32()
            reply.int32s()  # replicas
            isr = reply.int32s()
            if found == topic and topic_error == 0:
                out[index] = PartitionView(error, leader, isr)
    return out


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("broker closed the connection mid-reply")
        data += chunk
    return data


class _Reader:
    def __init__(self, data: bytes) -> None:
        self._data, self._at = data, 0

    def _take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self._data, self._at)
        self._at += struct.calcsize(fmt)
        return int(value)

    def int8(self) -> int:
        return self._take(">b")

    def int16(self) -> int:
        return self._take(">h")

    def int32(self) -> int:
        return self._take(">i")

    def string(self) -> str | None:
        n = self.int16()
        if n < 0:
            return None
        self._at += n
        return self._data[self._at - n : self._at].decode()

    def int32s(self) -> tuple[int, ...]:
        return tuple(self.int32() for _ in range(self.int32()))
