"""What ``stepscope app`` serves: Streamlit's ``st.App`` on the entry script, with the first
visit's front end sped up (:mod:`debugger.ui.frontend`).

``streamlit run`` of this file finds ``app`` and serves it as it serves a script (the same
options, sessions and start-up). Middleware is ``st.App``'s public way to change what the
server answers; Streamlit's installed files stay as they are. Its lifespan, which runs
before the server accepts a connection, sets ``TCP_NODELAY`` on the listening socket
(:mod:`debugger.ui.nodelay` says why).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware

from debugger.ui import frontend, nodelay

ENTRY = Path(__file__).with_name("entry.py")
"""The navigation and pages (the script ``streamlit run app.py`` runs too)."""

_STATIC = frontend.static_dir()


@asynccontextmanager
async def _lifespan(_app: st.App) -> AsyncIterator[None]:
    """Before the first connection: the listening socket sends without delay."""
    nodelay.set_nodelay(int(st.get_option("server.port")))
    yield


app = st.App(
    ENTRY,
    lifespan=_lifespan,
    middleware=[
        Middleware(frontend.StaticFromMemory, static=_STATIC),
        Middleware(
            frontend.PreloadIndex,
            tags=frontend.preload_tags(frontend.modules_to_preload(_STATIC)),
        ),
    ],
)
