"""Send each of the server's answers at once: ``TCP_NODELAY`` on its listening socket.

Streamlit binds its listening socket itself (``socket.socket(family)``, protocol 0) and
hands it to uvicorn; asyncio sets ``TCP_NODELAY`` only on accepted sockets whose protocol
is ``IPPROTO_TCP``, so every connection of the app runs with Nagle's algorithm. Uvicorn
writes an answer's headers and its body separately; the body then waits for the browser
to acknowledge the headers, and the browser delays that acknowledgement by 40 ms. Measured
on a kept-alive connection: each static file or health check after the first took 44 ms
instead of ~0.3 ms; a first visit's ~90 front-end files, over six connections, arrived over
~0.75 s instead of ~0.45 s, and its first page was drawn 0.24 s later (benchmarks/README.md,
App start); the websocket's messages (each a separate write) waited too.

Accepted sockets inherit ``TCP_NODELAY`` from the listening one (Linux and the BSDs), so it
is set there once, from the app's lifespan, which runs before uvicorn accepts a connection.
The listening socket is found among the process's open files by its port; where none is
found (another platform's file table, a server started otherwise), nothing changes.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat

_FD_DIRS = ("/proc/self/fd", "/dev/fd")
"""Where the process's open files are listed (Linux, then macOS and the BSDs)."""


def listening_sockets(port: int) -> list[int]:
    """File descriptors of this process's TCP sockets listening on ``port``."""
    for folder in _FD_DIRS:
        try:
            fds = [int(name) for name in os.listdir(folder) if name.isdigit()]
        except OSError:
            continue
        return [fd for fd in fds if _listens_on(fd, port)]
    return []


def _listens_on(fd: int, port: int) -> bool:
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return False
        sock = socket.socket(fileno=fd)
    except OSError:
        return False
    try:
        if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6):
            return False
        accepting = getattr(socket, "SO_ACCEPTCONN", None)
        if accepting is not None and not sock.getsockopt(socket.SOL_SOCKET, accepting):
            return False
        return int(sock.getsockname()[1]) == port
    except OSError:
        return False
    finally:
        sock.detach()  # the descriptor stays the server's


def set_nodelay(port: int) -> int:
    """Set ``TCP_NODELAY`` on the sockets listening on ``port``; returns how many."""
    done = 0
    for fd in listening_sockets(port):
        with contextlib.suppress(OSError):
            sock = socket.socket(fileno=fd)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                done += 1
            finally:
                sock.detach()
    return done
