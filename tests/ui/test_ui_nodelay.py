"""The app's server answers without Nagle's delay: ``TCP_NODELAY`` on its listening socket,
inherited by every connection it accepts (:mod:`debugger.ui.nodelay`).

Real sockets bound as Streamlit binds its own (``socket.socket(family)``, protocol 0, the
case asyncio leaves without ``TCP_NODELAY``), and the app's own lifespan in a fresh
interpreter (``debugger.ui.asgi`` builds an ``st.App``, which pins process-wide settings).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager

from debugger.ui import nodelay


@contextmanager
def _listener() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET)  # as Streamlit's _bind_socket: protocol 0
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    try:
        yield sock
    finally:
        sock.close()


def _accepted_nodelay(listener: socket.socket) -> int:
    with socket.create_connection(listener.getsockname()) as client:
        accepted, _ = listener.accept()
        with accepted:
            client.sendall(b"x")
            assert accepted.recv(1) == b"x"  # the connection works
            return accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_connections_accepted_after_it_send_without_delay() -> None:
    with _listener() as served, _listener() as other:
        port = served.getsockname()[1]
        assert _accepted_nodelay(served) == 0  # the default this module is for
        assert nodelay.listening_sockets(port) == [served.fileno()]
        assert nodelay.set_nodelay(port) == 1
        assert _accepted_nodelay(served) != 0
        assert _accepted_nodelay(other) == 0  # another port's socket is left alone
        assert served.fileno() >= 0 and other.fileno() >= 0  # descriptors still theirs


def test_a_connected_socket_on_the_port_is_not_a_listener() -> None:
    with _listener() as served, socket.create_connection(served.getsockname()) as client:
        accepted, _ = served.accept()
        with accepted:
            port = served.getsockname()[1]
            # the accepted socket shares the port; only the listening one is found
            assert nodelay.listening_sockets(port) == [served.fileno()]
            assert client.fileno() not in nodelay.listening_sockets(port)


def test_nothing_listening_changes_nothing() -> None:
    with _listener() as served:
        port = served.getsockname()[1]
    assert nodelay.set_nodelay(port) == 0


def test_the_app_sets_it_before_it_accepts_a_connection() -> None:
    """``asgi.app``'s lifespan, run as uvicorn runs it at start, on a listening socket."""
    script = textwrap.dedent(
        """
        import asyncio, socket
        from streamlit import config
        from streamlit.config_option import ConfigOption
        from debugger.ui import asgi

        sock = socket.socket(socket.AF_INET)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        # as Streamlit's server records the port it bound
        config.set_option(
            "server.port", sock.getsockname()[1], ConfigOption.STREAMLIT_DEFINITION
        )

        async def start():
            async with asgi._lifespan(asgi.app):
                pass

        asyncio.run(start())
        client = socket.create_connection(sock.getsockname())
        accepted, _ = sock.accept()
        print(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
        """
    )
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.strip().splitlines()[-1]) != 0
