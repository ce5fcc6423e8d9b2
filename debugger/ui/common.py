"""What every page shares: the store connection, the sidebar, error display."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import streamlit as st

from debugger.errors import StepscopeError
from debugger.store import Store, default_store_path

T = TypeVar("T")


def store_path() -> str:
    """The store the app serves: session state (tests, the sidebar), else the environment."""
    path = st.session_state.get("store_path") or os.environ.get("STEPSCOPE_STORE")
    return str(path or default_store_path())


@st.cache_resource(max_entries=4)
def _open(path: str, generation: int) -> Store:
    # Read-only: the app never holds a write lock while it serves.
    return Store.open(path, read_only=True)


def get_store() -> Store | None:
    """The cached read-only store, or None (with an error shown) when it cannot be opened."""
    path = store_path()
    try:
        return _open(path, st.session_state.get("store_generation", 0))
    except StepscopeError as e:
        st.error(str(e), icon=":material/error:")
        return None


def reopen_store() -> None:
    """Drop the cached connection (after an import wrote to the store)."""
    _open.clear()
    st.session_state["store_generation"] = st.session_state.get("store_generation", 0) + 1


def guarded(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
    """Call into the core; a StepscopeError becomes one ``st.error`` with its hint."""
    try:
        return fn(*args, **kwargs)
    except StepscopeError as e:
        st.error(str(e), icon=":material/error:")
        return None
