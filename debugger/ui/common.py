"""What every page shares: the store connection, cached reads, page links, error display.

The app reads the store read-only through one connection per store file that is open only
while a script run reads (so ``stepscope import`` can write between reads); pure reads are
cached with ``@st.cache_data`` as JSON strings keyed by the store path and a *generation*,
a fingerprint of the store's files that any write changes, so a cache hit costs a string
copy, not a deep copy of a large dict, and new runs show on the next rerun.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

import orjson
import streamlit as st

from debugger import json_text, pages_data
from debugger.errors import StepscopeError, StoreError
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

PAGE_CSS = """<style>
.stMainBlockContainer{padding-top:2.5rem}
[data-testid="stMarkdownContainer"] table.runs{table-layout:fixed;width:100%}
.store-path{font-size:.875rem;color:rgba(49,51,63,.6);margin:0;overflow-wrap:anywhere}
.store-path code{font-size:.75em;padding:.2em .4em;border-radius:.25rem;
background:rgba(172,177,195,.15)}
</style>"""
"""The app's few style rules: less empty space above a page (the reviewer's first screen
holds the evidence)."""

PAGE_MODULES = tuple(p.module for p in PAGES)
"""The page modules under debugger/ui/, in sidebar order."""

_PAGES: dict[str, Any] = {}
"""URL path to st.Page, filled by entry.py so pages can link to each other."""


def store_path() -> str:
    """The store the app serves: session state (tests, the sidebar), else the environment."""
    path = st.session_state.get("store_path") or os.environ.get("STEPSCOPE_STORE")
    return str(path or default_store_path())


def shown_path(path: str) -> str:
    """A store path as the app shows it: under the home directory as ``~/...`` (shorter,
    and a screenshot does not show whose machine it is)."""
    home = os.path.expanduser("~")
    if home not in ("", "/") and (path == home or path.startswith(home.rstrip("/") + "/")):
        return "~" + path[len(home.rstrip("/")) :]
    return path


class _Shared:
    """The one read-only connection of a store file, open only while a script run reads.

    DuckDB holds a file lock for as long as a connection is open, and a read-only lock
    refuses every writer (``stepscope import`` in a terminal). So the connection is opened
    on a script run's first read and closed when the last run reading through it ends;
    between reads the app holds nothing. One connection per file and process (DuckDB refuses
    a second attach of the same file in one process), with a cursor per run: a DuckDB
    connection must not be used by two threads at once.
    """

    def __init__(self) -> None:
        self.base: Store | None = None
        self.readers = 0
        self.writing = False


_SHARED: dict[str, _Shared] = {}
_cond = threading.Condition()
_local = threading.local()
"""This thread's lease: (path, cursor, depth) while a script run or fragment reads."""
WRITE_WAIT_S = 30.0
"""How long an import or a replay from the app waits for other sessions' reads to end."""


def _lease(path: str) -> Store:
    """This run's cursor on the shared connection of ``path``, opened on first use."""
    held = getattr(_local, "lease", None)
    if held is not None and held[0] == path and held[1] is not None:
        return held[1]  # type: ignore[no-any-return]
    with _cond:
        shared = _SHARED.setdefault(path, _Shared())
        _cond.wait_for(lambda: not shared.writing, timeout=WRITE_WAIT_S)
        if shared.base is None:
            shared.base = Store.open(path, read_only=True)
        shared.readers += 1
        try:
            cursor = shared.base.cursor()
        except BaseException:
            _drop_reader(shared)
            raise
    depth = held[2] if held is not None else 0
    if held is not None and held[1] is not None:
        _end_lease(held[0], held[1])  # a lease on another store
    _local.lease = (path, cursor, depth)
    return cursor


def _drop_reader(shared: _Shared) -> None:
    # called under _cond: the last reader closes the connection, releasing the file lock
    shared.readers -= 1
    if shared.readers <= 0 and shared.base is not None:
        shared.readers = 0
        shared.base.close()
        shared.base = None
    _cond.notify_all()


def _end_lease(path: str, cursor: Store) -> None:
    cursor.close()
    with _cond:
        shared = _SHARED.get(path)
        if shared is not None:
            _drop_reader(shared)


@contextmanager
def reading() -> Iterator[None]:
    """Scope of one script run (or fragment rerun): the store it reads is released after.

    Nested scopes (the Timeline's fragment inside a full run) share the outer lease.
    """
    held = getattr(_local, "lease", None)
    _local.lease = (held[0], held[1], held[2] + 1) if held else ("", None, 1)
    try:
        yield
    finally:
        path, cursor, depth = _local.lease
        if depth > 1:
            _local.lease = (path, cursor, depth - 1)
        else:
            _local.lease = None
            if cursor is not None:
                _end_lease(path, cursor)


def release_store() -> None:
    """End this run's read of the store now (before it writes: an import, a replay)."""
    held = getattr(_local, "lease", None)
    if held is not None and held[1] is not None:
        _local.lease = (held[0], None, held[2])
        _end_lease(held[0], held[1])


@contextmanager
def writing() -> Iterator[None]:
    """Keep the app's reads off the store while this process writes to it.

    DuckDB refuses a writable attach of a file the same process holds read-only, so the
    write waits for the other sessions' reads to end and new reads wait for the write.

    Raises:
        StoreError: other sessions kept reading for longer than :data:`WRITE_WAIT_S`.
    """
    path = store_path()
    release_store()
    with _cond:
        shared = _SHARED.setdefault(path, _Shared())
        if not _cond.wait_for(lambda: shared.readers == 0 and not shared.writing,
                              timeout=WRITE_WAIT_S):  # fmt: skip
            raise StoreError(
                f"the store {path} is being read by other sessions of the app",
                "try again in a moment",
            )
        shared.writing = True
    try:
        yield
    finally:
        with _cond:
            shared.writing = False
            _cond.notify_all()
        st.cache_data.clear()


def open_cached(path: str, gen: int) -> Store:
    """The read-only store at ``path``, as this script run's own cursor.

    ``gen`` (the store's :func:`generation`) keys the caches that call this; the connection
    itself lives only while the run reads (see :class:`_Shared`).

    Raises:
        StoreError: the store cannot be opened.
    """
    del gen
    return _lease(path)


def warm_store(path: str) -> Store:
    """Open the store once before any session asks for it (imports, DuckDB's set-up).

    Called at the server's start, off any script run. Returns a store for the caller's own
    reads; closing it releases the file.

    Raises:
        StoreError: the store cannot be opened.
    """
    return Store.open(path, read_only=True)


def generation() -> int:
    """A fingerprint of the served store's files: it changes when anything writes to them.

    Cached reads are keyed on it, so runs imported by another process (``stepscope import``
    in a terminal) show on the next rerun without a restart.
    """
    return fingerprint(store_path())


def fingerprint(path: str) -> int:
    """Hash of the size and modification time of a store file and its write-ahead log."""
    parts: list[int] = []
    for name in (path, f"{path}.wal"):
        try:
            stat = os.stat(name)
        except OSError:
            parts += [0, 0]
            continue
        parts += [stat.st_mtime_ns, stat.st_size]
    return hash(tuple(parts))


def get_store() -> Store | None:
    """The read-only store for this run, or None (with an error shown) when it cannot be
    opened."""
    try:
        return open_cached(store_path(), generation())
    except StepscopeError as e:
        st.error(str(e), icon=":material/error:")
        return None


def reopen_store() -> None:
    """Drop cached reads so every session reads the store afresh (the sidebar's button)."""
    release_store()
    st.cache_data.clear()


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
    """Remember the app's pages by their URL path in :data:`PAGES` (called by entry.py on
    every run; the default page is served at the root whatever its path)."""
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
