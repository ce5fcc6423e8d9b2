"""``stepscope app``'s server in front of Streamlit's: the first page's element modules
preloaded in the served HTML, and the front end's files answered on the event loop.

Against the installed Streamlit's own static files and its own static handler (the one its
server mounts), through Starlette's test client: the same bytes, the hints in the page.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Mount
from starlette.testclient import TestClient

from debugger.ui import frontend


@pytest.fixture(scope="module")
def static() -> Path:
    return frontend.static_dir()


@pytest.fixture(scope="module")
def client(static: Path) -> TestClient:
    """Streamlit's static handler behind the app's two middlewares, as ``asgi.py`` stacks
    them."""
    from streamlit.web.server.starlette.starlette_static_routes import (
        create_streamlit_static_handler,
    )

    tags = frontend.preload_tags(frontend.modules_to_preload(static))
    app = Starlette(
        routes=[
            Mount("/", app=create_streamlit_static_handler(directory=str(static), base_url=None))
        ],
        middleware=[
            Middleware(frontend.StaticFromMemory, static=static),
            Middleware(frontend.PreloadIndex, tags=tags),
        ],
    )
    return TestClient(app)


def _stem(name: str) -> str:
    return name.rsplit(".", 2)[0]


def test_the_installed_streamlit_has_every_first_page_module(static: Path) -> None:
    """Each element kind of the Runs page is found (a Streamlit release that renames one
    fails here, not silently on the page), dependencies before the modules that import them,
    and nothing the page already loads."""
    modules = frontend.modules_to_preload(static)
    assert {_stem(m) for m in modules} >= set(frontend.FIRST_PAGE_ELEMENTS)
    index = (static / "index.html").read_text(encoding="utf-8")
    js = static / "static" / "js"
    for at, name in enumerate(modules):
        assert (js / name).is_file() and f"/{name}" not in index
        imported = re.findall(r"""(?:from|import)\s*["']\./([^"'/]+\.js)["']""",
                              (js / name).read_text(encoding="utf-8"))  # fmt: skip
        assert all(dep in modules[:at] or f"/{dep}" in index for dep in imported), name
    assert len(modules) == len(set(modules))


def test_preload_order_cycles_and_a_missing_front_end(tmp_path: Path) -> None:
    js = tmp_path / "static" / "js"
    js.mkdir(parents=True)
    (tmp_path / "index.html").write_text(
        '<head><script type="module" src="./static/js/index.AAAAAAAA.js"></script></head>'
    )
    (js / "index.AAAAAAAA.js").write_text('import"./Button.BBBBBBBB.js";')
    (js / "Button.BBBBBBBB.js").write_text(
        'import{a}from"./index.AAAAAAAA.js";import{b}from"./lib.CCCCCCCC.js";'
    )
    (js / "lib.CCCCCCCC.js").write_text('import{c}from"./Button.BBBBBBBB.js";')  # a cycle
    (js / "Other.DDDDDDDD.js").write_text("")
    assert frontend.modules_to_preload(tmp_path, ["Button", "Nothing"]) == [
        "lib.CCCCCCCC.js",
        "Button.BBBBBBBB.js",
    ]
    assert frontend.modules_to_preload(tmp_path / "none") == []
    assert frontend.preload_tags(["a.js"]) == (
        b'<link rel="modulepreload" crossorigin href="./static/js/a.js">'
    )


@pytest.mark.parametrize("path", ["/", "/timeline?run=x", "/runs"])
def test_every_page_address_gets_the_hints_once(
    client: TestClient, static: Path, path: str
) -> None:
    answer = client.get(path)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    page = answer.text
    tags = frontend.preload_tags(frontend.modules_to_preload(static)).decode()
    assert page.count(tags) == 1 and page.index(tags) < page.index("</head>")
    assert int(answer.headers["content-length"]) == len(answer.content)
    assert "etag" not in answer.headers  # the file's tag does not name the rewritten page
    original = (static / "index.html").read_text(encoding="utf-8")
    assert page.replace(tags, "") == original


def test_front_end_files_are_the_installed_bytes(client: TestClient, static: Path) -> None:
    js = sorted((static / "static" / "js").iterdir())[:5]
    css = sorted((static / "static" / "css").iterdir())[:1]
    for file in [*js, *css]:
        rel = file.relative_to(static).as_posix()
        answer = client.get(f"/{rel}")
        assert answer.status_code == 200 and answer.content == file.read_bytes()
        assert answer.headers["cache-control"].startswith("public, immutable")
        assert int(answer.headers["content-length"]) == len(answer.content)
    assert client.get(f"/{js[0].relative_to(static).as_posix()}").headers["content-type"].split(
        ";"
    )[0] in ("text/javascript", "application/javascript")


def test_anything_else_goes_to_streamlit(client: TestClient, static: Path) -> None:
    """Names not in the front end (or a path that leaves it) are Streamlit's to answer:
    here its page for an unknown address, never a file from elsewhere."""
    for path in ("/static/js/nope.js", "/static/js/../../../pyproject.toml", "/static/js/"):
        answer = client.get(path)
        assert answer.status_code in (200, 301, 307, 400, 404)
        assert b"[project]" not in answer.content
    head = client.head("/")
    assert head.status_code == 200
