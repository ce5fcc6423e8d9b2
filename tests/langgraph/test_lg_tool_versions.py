"""Tool versions recorded the way the audit's hint says (JSON text in the config's metadata)
reach ``tool_versions`` on both savers; without them the audit's hint says how."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage

from debugger.audit import audit_run
from debugger.store import Store
from loaders import ImportOptions, import_source
from tests.langgraph import react_heavy
from tests.langgraph.lg_import import SAVERS, open_saver
from tests.langgraph.patterns_model import cfg

VERSIONS = {"search": "1.2.0", "calendar": "0.9"}


@pytest.fixture(params=SAVERS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, list[Any]]]:
    """Two ReAct threads, one run with tool versions in its config metadata."""
    source, opened = open_saver(request, tmp_path, "lgtools")
    with opened as saver:
        for thread, meta in (("with", {"tool_versions": json.dumps(VERSIONS)}), ("without", {})):
            graph = react_heavy._agent(saver, react_heavy._script(0, 2), 40)
            start = {"messages": [HumanMessage(content="go", id=f"{thread}-h")]}
            graph.invoke(start, cfg(thread, metadata=meta))
        metas = [t.metadata for t in saver.list(cfg("with"))]
        path = tmp_path / "s.duckdb"
        with Store.open(path) as st:
            import_source(st, source, ImportOptions())
    yield path, metas


def test_tool_versions_from_config_metadata(store: tuple[Path, list[Any]]) -> None:
    path, metas = store
    # LangGraph itself keeps the text in every checkpoint's metadata
    assert metas and all(json.loads(m["tool_versions"]) == VERSIONS for m in metas)
    with Store.open(path, read_only=True) as st:
        with_versions = st.checkpoints("with")
        without = st.checkpoints("without")
        assert [c.tool_versions for c in with_versions] == [VERSIONS] * len(metas)
        assert all(not c.tool_versions for c in without)
        hint = [f.hint for f in audit_run(st, "without").findings
                if f.rule_id == "missing-run-metadata"]  # fmt: skip
    assert hint and 'json.dumps({"search": "1.2"})' in hint[0]
