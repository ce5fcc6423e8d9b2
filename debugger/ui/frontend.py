"""How the browser gets Streamlit's front end on a first visit: sooner, and all at once.

Two wrappers of the server (``st.App`` middleware, :mod:`debugger.ui.asgi`), for the two
costs a first visit of the Runs page pays over bare Streamlit's:

- Streamlit's front end loads the code of each element kind (a button, a text input, a
  toggle, HTML inside Markdown) only when the first element of that kind arrives over the
  websocket, after the script ran: the page then waits for a second round of downloads and
  compiles before its table and widgets show (skeletons until then). The served
  ``index.html`` already lists the front end's core modules as ``<link
  rel="modulepreload">``; :class:`PreloadIndex` adds the first page's element modules to
  that list, so the browser fetches and compiles them with the rest, before the websocket
  opens.
- Starlette serves each static file by stat, open and 64 KiB reads on worker threads, each
  step a hand-over of Python's GIL; while the server's warm-up (:func:`serve.warm`) holds
  the GIL, each hand-over waits. :class:`StaticFromMemory` answers the front end's files on
  the event loop in one send.

The modules' names carry content hashes that change with each Streamlit release, so they
are found in the installed Streamlit's files at start; a release that names them otherwise
gets fewer hints, never a broken page. Streamlit's installed files are never written.
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from pathlib import Path
from typing import Any

FIRST_PAGE_ELEMENTS = ("Button", "ButtonGroup", "TextInput", "Checkbox", "Html")
"""The front-end modules of what the Runs page draws and bare Streamlit's first page does
not: the sidebar's button, the status pills (a button group), the search box, the replays
toggle (a checkbox), ``st.html`` (the list of runs, Needs attention, the sidebar's store
path)."""

STATIC_MAX_AGE_S = 365 * 24 * 60 * 60
"""How long a browser may keep a front-end file (as Streamlit answers: the names carry
content hashes)."""

_MODULE = re.compile(r"^(?P<stem>.+)\.[A-Za-z0-9_-]{8}\.js$")
_IMPORT = re.compile(rb"""(?:from|import)\s*["']\./([^"'/]+\.js)["']""")
_LOADED = re.compile(r"""(?:href|src)="\./static/js/([^"]+)\"""")
_CLOSE_HEAD = b"</head>"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def static_dir() -> Path:
    """The installed Streamlit's front end (``index.html``, ``static/js`` and the rest)."""
    from streamlit import file_util

    return Path(file_util.get_static_dir())


def modules_to_preload(static: Path, stems: Iterable[str] = FIRST_PAGE_ELEMENTS) -> list[str]:
    """File names under ``static/js`` of the modules named ``stems`` and of every module
    they import, dependencies first, less those ``index.html`` already loads."""
    js = static / "static" / "js"
    try:
        names = sorted(p.name for p in js.iterdir())
        index = (static / "index.html").read_text(encoding="utf-8")
    except OSError:
        return []
    by_stem: dict[str, list[str]] = {}
    for name in names:
        found = _MODULE.match(name)
        if found:
            by_stem.setdefault(found["stem"], []).append(name)
    loaded = set(_LOADED.findall(index))
    order: list[str] = []
    seen: set[str] = set()

    def visit(name: str) -> None:
        if name in seen or name in loaded:
            return
        seen.add(name)
        try:
            code = (js / name).read_bytes()
        except OSError:
            return
        for dep in _IMPORT.findall(code):
            visit(dep.decode())
        order.append(name)

    for stem in stems:
        for name in by_stem.get(stem, []):
            visit(name)
    return order


def preload_tags(modules: Iterable[str]) -> bytes:
    """``<link rel="modulepreload">`` tags for ``modules``, as ``index.html`` writes its own."""
    return "".join(
        f'<link rel="modulepreload" crossorigin href="./static/js/{name}">' for name in modules
    ).encode()


class PreloadIndex:
    """ASGI middleware: ``tags`` go before ``</head>`` of every HTML page the app serves
    (``index.html``, at the root and at every page's path)."""

    def __init__(self, app: ASGIApp, tags: bytes) -> None:
        self.app = app
        self.tags = tags

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request, rewriting a whole, uncompressed HTML answer."""
        if scope.get("type") != "http" or scope.get("method") != "GET" or not self.tags:
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        body: list[bytes] = []

        async def rewrite(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                sent = dict(message.get("headers") or [])
                html = sent.get(b"content-type", b"").startswith(b"text/html")
                if html and message.get("status") == 200 and b"content-encoding" not in sent:
                    start = message  # sent with the rewritten page's length
                    return
            elif start is not None and message["type"] == "http.response.body":
                body.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                page = b"".join(body).replace(_CLOSE_HEAD, self.tags + _CLOSE_HEAD, 1)
                headers = [
                    (k, str(len(page)).encode() if k == b"content-length" else v)
                    for k, v in start.get("headers") or []
                    if k != b"etag"  # the file's tag does not name this content
                ]
                await send({**start, "headers": headers})
                await send({"type": "http.response.body", "body": page, "more_body": False})
                return
            await send(message)

        await self.app(scope, receive, rewrite)


class StaticFromMemory:
    """ASGI middleware answering GETs of Streamlit's front-end files (``/static/...``) on
    the event loop: the file read at once (local, at most a few MB), one send, no worker
    thread. Only files listed at start are answered, so no path from a request reaches the
    file system; anything else goes on to Streamlit."""

    def __init__(self, app: ASGIApp, static: Path) -> None:
        self.app = app
        kept = f"public, immutable, max-age={STATIC_MAX_AGE_S}".encode()
        self.files: dict[str, tuple[Path, bytes]] = {}
        for sub in ("js", "css", "media"):
            folder = static / "static" / sub
            if folder.is_dir():
                self.files.update((f"/static/{sub}/{p.name}", (p, kept)) for p in folder.iterdir())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a listed file, or pass the request on."""
        listed = None
        if scope.get("type") == "http" and scope.get("method") == "GET":
            path, root = scope.get("path", ""), scope.get("root_path", "")
            listed = self.files.get(path[len(root) :] if root and path.startswith(root) else path)
        try:
            body = listed[0].read_bytes() if listed is not None else None
        except OSError:
            body = None
        if listed is None or body is None:
            await self.app(scope, receive, send)
            return
        file, cache = listed
        kind = mimetypes.guess_type(file.name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind.endswith("javascript"):
            kind += "; charset=utf-8"
        headers = [
            (b"content-type", kind.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"cache-control", cache),
        ]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body, "more_body": False})
