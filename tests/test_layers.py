"""The layers are a checked contract, and modules do not import each other in a cycle.

Every module under debugger/ and loaders/ is found by walking the tree, so a new module is
covered the day it is added. Imports are read from the source (module level and inside
functions; ``if TYPE_CHECKING:`` blocks are left out, they never run), so lazy imports count.

Layers, from the top (a module may import its own layer and the ones its row allows):

- ``ui`` (debugger/ui/): widgets; the only place streamlit is imported.
- ``pages_data`` (debugger/pages_data/): what each page shows, as plain data.
- ``cli`` (debugger/cli/, and any module named ``cli`` or ``*_cli``): thin over the core;
  of the ui it may import ``debugger.ui.serve`` only (``stepscope app`` starts the server).
- ``core``: every other debugger module (audit, diff, replay, migrations, runtime, views...).
- ``loaders`` (loaders/): readers and flavours; they write through the store.
- ``store`` (debugger/store/) and ``contract`` (debugger/contract.py): the store may use the
  contract, never the reverse.
- ``base`` (debugger/model.py, debugger/errors.py, and the two leaf helpers every part reads,
  debugger/settings.py and debugger/json_text.py, which the store needs for its default
  path and for reading JSON texts): importing nothing of ours above them.

An import of a package's submodule is an edge to that submodule; ``import debugger`` or
``from debugger.store import Store`` is an edge to the package's ``__init__``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("debugger", "loaders")

ALLOWED: dict[str, frozenset[str]] = {
    "ui": frozenset({"ui", "pages_data", "core", "loaders", "store", "contract", "base"}),
    "pages_data": frozenset({"pages_data", "core", "loaders", "store", "contract", "base"}),
    "cli": frozenset({"cli", "core", "loaders", "store", "contract", "base"}),
    "core": frozenset({"core", "loaders", "store", "contract", "base"}),
    "loaders": frozenset({"loaders", "store", "contract", "base"}),
    "store": frozenset({"store", "contract", "base"}),
    "contract": frozenset({"contract", "base"}),
    "base": frozenset({"base"}),
}
"""For each layer, the layers its modules may import."""
BASE = frozenset(
    {
        "debugger.model",
        "debugger.errors",
        "debugger.settings",
        "debugger.json_text",
        "debugger.views",
        "debugger.gil",
    }
)
"""The bottom layer: records, errors, and the leaf helpers the store itself needs.

``debugger.views`` is here because the records' ``_repr_html_`` (Jupyter's display hook) calls
it: it renders records as HTML and imports nothing of ours but ``json_text`` at run time (the
record and diff types only for typing), so it sits beside the records it draws.
``debugger.gil`` (the thread switch interval for a block of work) imports nothing of ours;
the loaders' import and the app's warm-up both use it."""
CLI_MAY_IMPORT = frozenset({"debugger.ui.serve"})
"""The one ui module the CLI needs: ``stepscope app`` and ``stepscope demo`` start the server."""


@dataclass(frozen=True)
class Edge:
    """One import of a project module by another."""

    source: str
    target: str
    line: int

    def where(self) -> str:
        return f"{module_path(self.source)}:{self.line}"


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module of debugger/ and loaders/."""
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).with_suffix("")
            if "__pycache__" in rel.parts:
                continue
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            found[".".join(parts)] = path
    return found


MODULES = modules()


def module_path(name: str) -> str:
    return str(MODULES[name].relative_to(REPO))


def _in(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def layer(name: str) -> str:
    """The layer of a module of ours, by its package prefix (see the module docstring)."""
    parts = name.split(".")
    if _in(name, "loaders"):
        return "loaders"
    if _in(name, "debugger.ui"):
        return "ui"
    if _in(name, "debugger.pages_data"):
        return "pages_data"
    if any(p == "cli" or p.endswith("_cli") or p.startswith("cli_") for p in parts[1:]):
        return "cli"
    if _in(name, "debugger.store"):
        return "store"
    if _in(name, "debugger.contract"):
        return "contract"
    if name in BASE:
        return "base"
    return "core"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST) -> Iterator[ast.AST]:
    """Every node under ``node`` except the bodies of ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for other in child.orelse:
                yield other
                yield from _walk(other)
            continue
        yield child
        yield from _walk(child)


def _resolve(name: str, node: ast.ImportFrom) -> str:
    """The absolute module a ``from ... import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    is_package = MODULES[name].name == "__init__.py"
    base = name.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _ours(dotted: str) -> str | None:
    """The deepest module of ours that ``dotted`` names or lies in (None if not ours)."""
    parts = dotted.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in MODULES:
            return candidate
        parts.pop()
    return None


def imports(name: str) -> Iterator[tuple[str, int]]:
    """(imported absolute name, line) of every import in a module, ours or not."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"), filename=str(MODULES[name]))
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(name, node)
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                yield (sub if sub in MODULES else module), node.lineno


def edges() -> list[Edge]:
    """Every import of one of our modules by another (self-imports left out)."""
    out = []
    for name in MODULES:
        for target, line in imports(name):
            ours = _ours(target)
            if ours is not None and ours != name:
                out.append(Edge(name, ours, line))
    return out


def layer_violations(all_edges: list[Edge]) -> list[str]:
    bad = []
    for e in all_edges:
        src, dst = layer(e.source), layer(e.target)
        if dst in ALLOWED[src] or (src == "cli" and e.target in CLI_MAY_IMPORT):
            continue
        bad.append(f"{e.where()}: {e.source} ({src}) imports {e.target} ({dst})")
    return sorted(set(bad))


def cycles(all_edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for e in all_edges:
        graph[e.source].add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def _describe(component: list[str], all_edges: list[Edge]) -> str:
    inside = set(component)
    lines = [f"{e.where()}: {e.source} -> {e.target}" for e in all_edges
             if e.source in inside and e.target in inside]  # fmt: skip
    return "cycle between " + ", ".join(component) + ":\n    " + "\n    ".join(sorted(set(lines)))


def test_every_module_is_found_and_has_a_layer() -> None:
    for must in ("debugger", "debugger.store", "debugger.model", "debugger.errors",
                 "debugger.pages_data", "loaders", "loaders.base"):  # fmt: skip
        assert must in MODULES
    assert layer("debugger.ui.timeline") == "ui"
    assert layer("debugger.pages_data.timeline") == "pages_data"
    assert layer("debugger.cli") == layer("debugger.cli.audit") == "cli"
    assert layer("debugger.audit.rules") == layer("debugger.diff") == "core"
    assert layer("debugger.store.reads") == "store"
    assert layer("debugger.contract") == "contract"
    assert layer("loaders.langgraph.decode") == "loaders"
    assert layer("debugger.model") == layer("debugger.errors") == "base"
    assert layer("debugger.settings") == layer("debugger.json_text") == "base"


def test_the_checks_can_fail() -> None:
    fake = [Edge("debugger.store", "debugger.ui", 1), Edge("debugger.ui", "debugger.store", 2)]
    assert layer_violations(fake) == [
        f"{module_path('debugger.store')}:1: debugger.store (store) imports debugger.ui (ui)"
    ]
    assert cycles(fake) == [["debugger.store", "debugger.ui"]]


def test_imports_follow_the_layers() -> None:
    bad = layer_violations(edges())
    assert not bad, "imports against the layers:\n" + "\n".join(bad)


def test_no_import_cycles_between_modules() -> None:
    all_edges = edges()
    found = [_describe(c, all_edges) for c in cycles(all_edges)]
    assert not found, "\n".join(found)


def test_only_the_ui_imports_streamlit() -> None:
    bad = sorted(
        f"{module_path(name)}:{line}: {name} imports {target}"
        for name in MODULES
        if not _in(name, "debugger.ui")
        for target, line in imports(name)
        if _in(target, "streamlit")
    )
    assert not bad, "streamlit outside debugger/ui:\n" + "\n".join(bad)
