"""What every page shares: the store connection, cached reads, page links, error display.

The app holds one cached read-only connection per store file (``@st.cache_resource``); pure
reads are cached with ``@st.cache_data`` as JSON strings keyed by the store path and a
*generation* that an import bumps, so a cache hit costs a string copy, not a deep copy of a
large dict.
"""

from __future__ import annotations

import importlib
import os
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

import orjson
import streamlit as st

from debugger import json_text, pages_data
from debugger.errors import StepscopeError
from debugger.store import Store, default_store_path

T = TypeVar("T")


@dataclass(frozen=True)
class PageInfo:
    """What the navigation shows of a page, known without importing the page's module."""

    module: str
    """The page module under debugger/ui/ (it defines ``page()``)."""
    title: str
    icon: str
    url: str


PAGES = (
    PageInfo("runs", "Runs", ":material/list:", "runs"),
    PageInfo("timeline", "Timeline", ":material/timeline:", "timeline"),
    PageInfo("diff", "Diff", ":material/difference:", "diff"),
    PageInfo("audit", "Audit", ":material/fact_check:", "audit"),
    PageInfo("replay", "Replay", ":material/replay:", "replay"),
    PageInfo("migrations", "Migrations", ":material/upgrade:", "migrations"),
    PageInfo("imports", "Import", ":material/upload:", "import"),
    PageInfo("sql", "SQL", ":material/terminal:", "sql"),
)
"""The app's pages in sidebar order (the first is the default).

The navigation is built from this, and a page's module is imported when the page first runs:
the first page then does not wait for the others' imports (DeepDiff and pydantic for the
diff pages, the replay engine: slow imports, on a start that competes with the browser)."""

PAGE_MODULES = tuple(p.module for p in PAGES)
"""The page modules under debugger/ui/, in sidebar order."""

_PAGES: dict[str, Any] = {}
"""URL path to st.Page, filled by entry.py so pages can link to each other."""


def store_path() -> str:
    """The store the app serves: session state (tests, the sidebar), else the environment."""
    path = st.session_state.get("store_path") or os.environ.get("STEPSCOPE_STORE")
    return str(path or default_store_path())


_OPENED: dict[tuple[str, int], Store] = {}
"""Connections handed out by :func:`_open`, so :func:`reopen_store` can close every one."""
_CURSORS: weakref.WeakSet[Store] = weakref.WeakSet()
"""Per-session cursors on those connections, closed by :func:`reopen_store`."""
_GENERATION: dict[str, int] = {}
"""Per store path: bumped by every import, so all sessions see the new data."""
_lock = threading.Lock()
_CURSOR_KEY = "_stepscope_cursor"


@st.cache_resource(max_entries=4, show_spinner=False)
def _open(path: str, generation: int) -> Store:
    # Read-only: the app never holds a write lock while it serves. No spinner: an open
    # takes milliseconds, and serve.warm calls this off any script run, with no page to draw on.
    store = Store.open(path, read_only=True)
    with _lock:
        _OPENED[(path, generation)] = store
    return store


def open_cached(path: str, gen: int) -> Store:
    """The read-only store for a path and generation, as this session's own cursor.

    Each Streamlit session runs in its own thread, and a DuckDB connection must not be used
    by two threads at once; a session runs one script (or fragment) at a time, so each reads
    through its own cursor of the one cached connection (same database, same cache).

    Raises:
        StoreError: the store cannot be opened.
    """
    base = _open(path, gen)
    held = st.session_state.get(_CURSOR_KEY)
    if isinstance(held, tuple) and held[:2] == (path, gen):
        return held[2]  # type: ignore[no-any-return]
    store = _cursor(base)
    st.session_state[_CURSOR_KEY] = (path, gen, store)
    with _lock:
        _CURSORS.add(store)
    if isinstance(held, tuple):
        held[2].close()  # the session's cursor on an older generation or another store
    return store


def warm_store(path: str) -> Store:
    """Open the app's cached connection to ``path`` before any session asks for it.

    Called at the server's start, off any script run, so the first page finds the store
    open. Returns a cursor of that connection for the caller's own reads; close it.

    Raises:
        StoreError: the store cannot be opened.
    """
    return _cursor(_open(path, _GENERATION.get(path, 0)))


def _cursor(base: Store) -> Store:
    # the base connection is shared by every session's thread; its catalog is read under the lock
    with _lock:
        return base.cursor()


def generation() -> int:
    """The generation of the served store (bumped by every import, shared by all sessions)."""
    return _GENERATION.get(store_path(), 0)


def get_store() -> Store | None:
    """The cached read-only store, or None (with an error shown) when it cannot be opened."""
    try:
        return open_cached(store_path(), generation())
    except StepscopeError as e:
        st.error(str(e), icon=":material/error:")
        return None


def reopen_store() -> None:
    """Close every cached connection to the store and drop cached reads.

    Called before an import (DuckDB refuses a writable open of a file that the same process
    still holds read-only, so the connections are closed, not only forgotten) and after it,
    so every session reads the new data.
    """
    path = store_path()
    with _lock:
        for cursor in [c for c in _CURSORS if c.path == path]:
            _CURSORS.discard(cursor)
            cursor.close()
        for key in [k for k in _OPENED if k[0] == path]:
            closed = _OPENED.pop(key)
            closed.close()
    _open.clear()
    st.cache_data.clear()
    _GENERATION[path] = _GENERATION.get(path, 0) + 1
    st.session_state["store_generation"] = _GENERATION[path]  # pages that key on the session


def guarded(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Call into the core; a StepscopeError becomes one ``st.error`` with its hint."""
    try:
        return fn(*args, **kwargs)
    except StepscopeError as e:
        st.error(str(e), icon=":material/error:")
        return None
    except RecursionError:  # a value stored before the import's depth limit
        st.error(str(json_text.too_deep()), icon=":material/error:")
        return None


def page_labels(module_name: str) -> tuple[str, str, str]:
    """A page module's title, icon and URL path, from the registry (by its ``__name__``)."""
    short = module_name.rsplit(".", 1)[-1]
    info = next(p for p in PAGES if p.module == short)
    return info.title, info.icon, info.url


def page_module(name: str) -> ModuleType:
    """A page module, imported."""
    return importlib.import_module(f"debugger.ui.{name}")


def page_modules() -> list[ModuleType]:
    """Every page module, imported (serve.warm preloads them once the first page is up)."""
    return [page_module(p.module) for p in PAGES]


def _runner(module: str) -> Callable[[], None]:
    def run() -> None:
        page_module(module).page()

    run.__name__ = run.__qualname__ = f"{module}_page"
    return run


PAGE_RUNNERS = {p.module: _runner(p.module) for p in PAGES}
"""One function per page that imports its module and runs it (stable across reruns)."""


def register_pages(pages: dict[str, Any]) -> None:
    """Remember the app's pages by URL path (called by entry.py on every run)."""
    _PAGES.clear()
    _PAGES.update(pages)


def page_for(url: str) -> Any:
    """The st.Page registered under a URL path (for ``st.switch_page`` and ``st.page_link``)."""
    return _PAGES.get(url, url)


def query_int(name: str) -> int | None:
    """An integer query parameter, or None when absent or not a number."""
    value = st.query_params.get(name)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


# -- cached pure reads (JSON strings; keyed by store path and generation) -------------------


@st.cache_data(max_entries=32, show_spinner=False)
def run_ids_json(path: str, gen: int) -> str:
    """Every run id, newest first."""
    store = open_cached(path, gen)
    return orjson.dumps([str(r) for r in store.runs()["run_id"]]).decode()


@st.cache_data(max_entries=32, show_spinner=False)
def refs_json(path: str, gen: int, run_id: str) -> str:
    """The run's step navigator positions (:func:`debugger.pages_data.step_refs`)."""
    refs = pages_data.step_refs(open_cached(path, gen), run_id)
    return orjson.dumps([r.__dict__ for r in refs]).decode()


def load_refs(path: str, gen: int, run_id: str) -> list[pages_data.StepRef]:
    """The run's step refs from the cache."""
    return [pages_data.StepRef(**r) for r in orjson.loads(refs_json(path, gen, run_id))]


@st.cache_data(max_entries=256, show_spinner=False)
def step_json(path: str, gen: int, run_id: str, checkpoint_id: str, ignore: tuple[str, ...]) -> str:
    """One step's view (:func:`debugger.pages_data.step_view`) as JSON."""
    store = open_cached(path, gen)
    refs = load_refs(path, gen, run_id)
    view = pages_data.step_view(
        store, run_id, checkpoint_id=checkpoint_id, ignore_paths=ignore, refs=refs
    )
    return view.to_json()


@st.cache_data(max_entries=16, show_spinner=False)
def state_json(path: str, gen: int, run_id: str, checkpoint_id: str) -> str:
    """A checkpoint's full working state as JSON (only fetched when someone opens it)."""
    ckpt = open_cached(path, gen).checkpoint(run_id, checkpoint_id=checkpoint_id)
    return json_text.dumps(ckpt.working_state)  # NaN stays NaN (st.json reads it)


@st.cache_data(max_entries=32, show_spinner=False)
def findings_json(path: str, gen: int, run_id: str) -> str:
    """The run's audit findings (:func:`debugger.pages_data.audit_findings`) as JSON."""
    return orjson.dumps(pages_data.audit_findings(open_cached(path, gen), run_id)).decode()
