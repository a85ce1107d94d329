"""The stack's port check sees every socket that would keep a server from binding its port:
a CI run once found containerd gone seconds after it started, which is what containerd
does when its CRI stream port cannot be bound."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import closing, contextmanager

from devstack.stack import port_holder


def _free_port() -> int:
    with closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def _listener(port: int = 0) -> Iterator[socket.socket]:
    with closing(socket.socket()) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()
        yield s


def test_a_free_port_has_no_holder() -> None:
    assert port_holder(_free_port()) is None


def test_a_listening_port_is_reported_with_its_socket() -> None:
    with _listener() as server:
        port = server.getsockname()[1]
        holder = port_holder(port)
    assert holder is not None
    assert f":{port}" in holder


def test_the_source_port_of_an_outgoing_connection_is_reported() -> None:
    """Nothing listens on the port, so connecting to it (the old check) finds it free,
    yet a server cannot bind it while the connection lives."""
    source = _free_port()
    with _listener() as server, closing(socket.socket()) as client:
        client.bind(("127.0.0.1", source))
        client.connect(server.getsockname())
        with closing(socket.socket()) as probe:
            assert probe.connect_ex(("127.0.0.1", source)) != 0, "something listens there"
        holder = port_holder(source)
        assert holder is not None
        assert f"127.0.0.1:{source}" in holder
    assert port_holder(source) is None


def test_a_port_whose_connection_is_closing_in_time_wait_is_free() -> None:
    """The server side closes first, so its end (the listening port) waits in TIME_WAIT;
    servers bind with SO_REUSEADDR, so that must not count as taken."""
    with _listener() as server:
        port = server.getsockname()[1]
        with closing(socket.socket()) as client:
            client.connect(("127.0.0.1", port))
            accepted, _ = server.accept()
            accepted.close()
            client.recv(1)  # the server's FIN
    assert port_holder(port) is None
