"""A reviewer can step through, diff and audit OpenAI Agents, pydantic-ai and CrewAI runs in
the app (AppTest), on the fixtures the real packages wrote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.runtimes.conftest import do_import
from tests.ui.helpers import open_app, texts

HERE = Path(__file__).parent


def _errors(at: Any) -> list[str]:
    return [e.value for e in at.error]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("agent-runtimes-app") / "store.duckdb"
    do_import(HERE / "openai_agents" / "data" / "advanced.sqlite", path)
    do_import(HERE / "openai_agents" / "data" / "runstate", path)
    do_import(HERE / "pydantic_ai" / "data" / "histories", path)
    do_import(HERE / "crewai" / "data" / "flows.sqlite", path)
    return path


@pytest.mark.parametrize(
    ("run", "step", "next_step"),
    [("support-7", "2", "3"), ("retried", "1", "2"), ("review-resumed", "2", "3")],
)
def test_timeline_steps_through_a_run(store: Path, run: str, step: str, next_step: str) -> None:
    at = open_app(store, "timeline", run=run, step=step)
    assert not at.exception and not _errors(at)
    page = texts(at)
    assert f"### Step {step}" in page
    at.button(key="timeline_next").click().run()
    assert not at.exception and f"### Step {next_step}" in texts(at)


def test_diff_page_on_turns(store: Path) -> None:
    at = open_app(store, "diff", a="support-7:1", b="support-7:3")
    assert not at.exception and not _errors(at)


@pytest.mark.parametrize(
    ("run", "said"),
    [("approval-paused", "RunState.from_string"), ("approval", "DeferredToolResults"),
     ("review-waiting", "from_pending")],
)  # fmt: skip
def test_audit_of_a_parked_run_says_how_to_resume(store: Path, run: str, said: str) -> None:
    at = open_app(store, "audit", run=run)
    assert not at.exception
    assert said in texts(at) + str(at.get("code"))
