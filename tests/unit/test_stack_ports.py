"""The stack's port check sees every socket that would keep a server from binding its port:
a CI run once found containerd gone seconds after it started, which is what containerd
does when its CRI stream port cannot be bound."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from devstack.node import NODE_IP
from devstack.procs import StackError
from devstack.stack import Bind, check_binds_free, port_holder

TIME_WAIT = "06"  # the state column of /proc/net/tcp{,6}


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


def _states(port: int) -> list[str]:
    """The kernel's states of the TCP sockets whose local port is `port`, IPv4 and IPv6."""
    states = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if int(local.rsplit(":", 1)[1], 16) == port:
                states.append(state)
    return states


def _jvm_listener(host: str = "::ffff:127.0.0.1") -> socket.socket:
    """A server socket as a JVM opens one: IPv6, dual-stack, SO_REUSEADDR."""
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.bind((host, 0))
    s.listen()
    return s


def _server_side_time_wait() -> int:
    """A port a JVM listened on whose accepted connection the server closed first: the
    socket `[::ffff:127.0.0.1]:port` left in TIME-WAIT (as `make dev-down` leaves them)."""
    with closing(_jvm_listener()) as server:
        port: int = server.getsockname()[1]
        with closing(socket.create_connection(("127.0.0.1", port))) as client:
            accepted, _ = server.accept()
            accepted.close()
            client.recv(1)  # the server's FIN
    return port


def _client_side_time_wait() -> int:
    """A JVM client's source port whose connection the client closed first: its socket
    (IPv6, v4-mapped, no SO_REUSEADDR) left in TIME-WAIT, as a stopping broker's clients
    leave theirs."""
    with closing(_jvm_listener()) as server:
        client = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        with closing(client):
            client.connect(("::ffff:127.0.0.1", server.getsockname()[1]))
            port: int = client.getsockname()[1]
            accepted, _ = server.accept()
        with closing(accepted):
            accepted.recv(1)  # the client's FIN
    return port


def _in_time_wait(port: int) -> None:
    # Among others: make test runs this beside a stack whose own connections may take the
    # same number as their source port (seen once: ['01', '06']).
    deadline = time.monotonic() + 5
    while TIME_WAIT not in _states(port):
        assert time.monotonic() < deadline, f"port {port}: states {_states(port)}, no TIME-WAIT"
        time.sleep(0.05)


def test_a_listening_jvms_closed_connections_in_time_wait_leave_its_port_free() -> None:
    """What `make dev-up` found at once after `make dev-down`: `[::ffff:127.0.0.1]:port` in
    TIME-WAIT. The server's side of the connection inherited SO_REUSEADDR from its
    listener, so a server binding the port again as the JVM does, or as Go does, can."""
    port = _server_side_time_wait()
    _in_time_wait(port)
    assert port_holder(Bind(port, jvm=True)) is None
    assert port_holder(Bind(port)) is None


def test_a_clients_time_wait_on_another_address_leaves_the_port_free() -> None:
    """The kubelet binds its port on the node's address only: a closed client connection
    from 127.0.0.1 on that port is no conflict, though a bind of every address sees one."""
    port = _client_side_time_wait()
    _in_time_wait(port)
    assert port_holder(Bind(port, host=NODE_IP)) is None


def test_a_port_listened_on_every_address_is_busy_whichever_way_a_server_binds_it() -> None:
    with closing(_jvm_listener("::")) as server:
        port = server.getsockname()[1]
        for bind in (Bind(port, jvm=True), Bind(port), Bind(port, host=NODE_IP)):
            holder = port_holder(bind)
            assert holder is not None, bind
            assert holder.startswith("LISTEN"), holder
        with pytest.raises(StackError, match=rf"port {port} is already in use .*pid={os.getpid()}"):
            check_binds_free([Bind(port)], patience=0)


@pytest.mark.skipif(os.geteuid() != 0, reason="closing another socket (ss -K) needs root")
def test_a_clients_time_wait_at_the_servers_address_is_closed_not_waited_out() -> None:
    """That socket does keep a server from binding (it never set SO_REUSEADDR), but it is
    a connection that is over: the check closes it at once instead of failing, or waiting
    for a minute, and the server can bind."""
    for _ in range(5):
        port = _client_side_time_wait()
        _in_time_wait(port)
        holder = port_holder(Bind(port, jvm=True))
        # The stack runs beside the unit tests: one of its clients may take the same
        # ephemeral port for a connection of its own meanwhile (a live socket listed
        # before ours). That port is really busy; the case needs another one.
        if holder is None or holder.startswith("TIME-WAIT") or "TIME-WAIT" not in holder:
            break
    assert holder is not None, "the kernel let a bind through a client's TIME-WAIT"
    assert holder.startswith("TIME-WAIT"), holder
    began = time.monotonic()
    check_binds_free([Bind(port, jvm=True)], patience=0)
    assert time.monotonic() - began < 5
    assert port_holder(Bind(port, jvm=True)) is None


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
