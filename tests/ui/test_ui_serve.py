"""``stepscope app``'s warm-up: what it reads is what the first page then uses.

The server itself (in-process Streamlit, the warm-up overlapping the browser's load) runs in
the browser test; here the warm-up is called directly, as the server's thread calls it.
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

from debugger.ui import common, serve
from tests.ui.helpers import listed_runs, open_app, texts


def test_warm_reads_the_runs_page_releases_the_store_then_renders(
    sample_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serve, "_wait_for_server", lambda: True)
    monkeypatch.setattr(serve, "OTHER_PAGES_AFTER_S", 0.0)
    path = str(sample_store)
    switching = sys.getswitchinterval()
    try:
        serve.warm(path)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert sys.getswitchinterval() == switching  # shortened only while it warms
    # warmed, and released: the app holds no lock on the store between reads
    assert common._SHARED.get(path) is None or common._SHARED[path].base is None
    assert all(f"debugger.ui.{name}" in sys.modules for name in common.PAGE_MODULES)
    at = open_app(sample_store)
    assert not at.exception and not at.error
    assert len(listed_runs(at)) == 13 and "Needs attention" in texts(at)


def test_warm_leaves_a_missing_store_to_the_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(serve, "_wait_for_server", lambda: True)
    monkeypatch.setattr(serve, "OTHER_PAGES_AFTER_S", 0.0)
    try:
        serve.warm(str(tmp_path / "none.duckdb"))  # no exception: the page shows the error
    finally:
        gc.unfreeze()
    at = open_app(tmp_path / "none.duckdb")
    assert at.error and "none.duckdb" in at.error[0].value


def test_the_runtime_reads_no_installed_package_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamlit's runtime, as it is created before the server listens, scans every installed
    distribution for custom components; ``stepscope app`` has it skip that scan."""
    import importlib.metadata

    from streamlit.components.v2 import manifest_scanner
    from streamlit.components.v2.component_manager import BidiComponentManager

    # restored after the test: the skip replaces the scanner for the whole process
    monkeypatch.setattr(manifest_scanner, "scan_component_manifests",
                        manifest_scanner.scan_component_manifests)  # fmt: skip
    if manifest_scanner.scan_component_manifests is serve._no_components:
        importlib.reload(manifest_scanner)  # an earlier in-process serve() left its skip
    read: list[int] = []
    real = importlib.metadata.distributions

    def counted() -> Iterable[importlib.metadata.Distribution]:
        read.append(1)
        return real()

    monkeypatch.setattr(importlib.metadata, "distributions", counted)
    BidiComponentManager().discover_and_register_components(start_file_watching=False)
    assert read  # what the runtime does on its own
    read.clear()
    serve._skip_component_scan()
    BidiComponentManager().discover_and_register_components(start_file_watching=False)
    assert not read


def test_the_first_page_imports_no_diff_code_and_no_dataframes(sample_store: Path) -> None:
    """The Runs page's modules and reads leave pandas, numpy, pyarrow, DeepDiff and the other
    pages to be imported later (the app's start competes with the browser for the CPU), and
    pages_data's lazy names all resolve. In a fresh interpreter: the test process has
    imported everything already."""
    import json
    import subprocess

    from debugger import pages_data

    code = (
        "import json, sys\n"
        "import debugger.ui.runs\n"
        "from debugger import pages_data\n"
        "debugger.ui.runs.warm(sys.argv[1])\n"
        "print(json.dumps(sorted(m for m in sys.modules\n"
        "    if m.split('.')[0] in ('deepdiff', 'pydantic', 'pandas', 'numpy', 'pyarrow')\n"
        "    or m.startswith('debugger.ui.') or m == 'debugger.replay.engine')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(sample_store)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert loaded == [
        "debugger.ui.common",
        "debugger.ui.runs",
    ]
    for name in pages_data.__all__:
        assert getattr(pages_data, name) is not None
    assert callable(pages_data.recent.clear_recent)  # submodules are attributes too


def test_app_flags_are_streamlit_options_and_carry_the_repository_config() -> None:
    """``stepscope app`` passes its settings as flags (an installed package has no
    ``.streamlit/config.toml``): each must be a real option, and the file's settings must
    all be among them with the same values."""
    import tomllib

    from streamlit import config

    config.get_config_options()  # fills the option table
    options = config._config_options_template
    assert set(serve.APP_FLAGS) <= set(options)
    repo_config = Path(__file__).resolve().parents[2] / ".streamlit" / "config.toml"
    with repo_config.open("rb") as f:
        sections = tomllib.load(f)
    settings = {
        f"{section}.{name}": str(value).lower() if isinstance(value, bool) else str(value)
        for section, values in sections.items()
        for name, value in values.items()
        if f"{section}.{name}" != "server.headless"  # set by --no-browser
    }
    assert settings.items() <= serve.APP_FLAGS.items()
