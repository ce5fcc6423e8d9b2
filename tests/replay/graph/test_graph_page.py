"""The Replay page knows a LangGraph run and asks for its graph instead of an agent."""

from __future__ import annotations

import html

from streamlit.testing.v1 import AppTest

from tests.replay.graph.conftest import Written
from tests.ui.helpers import open_app, texts

DESK = "sample_checkpoints.langgraph_refund.graph"


def _text(at: AppTest) -> str:
    """The page's text, as a person reads it: see tests.ui.helpers.texts."""
    return texts(at)


def test_a_langgraph_run_is_replayed_with_its_graph_from_the_page(lg: Written) -> None:
    at = open_app(lg.store, "replay", timeout=120, run="refund-A-7", step="3")
    assert not at.exception, at.exception
    assert at.text_input[0].label == "Graph (module:attribute)"
    at.text_input(key="replay_graph").set_value(f"{DESK}:fixed_graph")
    at.text_input(key="replay_mocks").set_value("sample_checkpoints.langgraph_refund.replay_mocks")
    at.text_input(key="replay_baseline").set_value(f"{DESK}:graph")
    at.text_input(key="replay_env").set_value("REFUND_PAYMENTS")  # the mocks read the ledger
    at.run()
    at.button[0].click().run()
    assert not at.exception, at.exception
    text = _text(at)
    assert "First divergence: step 4 (missing_call)" in text, text
    errors = html.unescape(" ".join(str(e.value) for e in at.error))
    assert "duplicate issue_refund" in errors and "refund-A-7" in errors
