"""The Audit and Migrations pages in AppTest, on the synthetic audit store."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from debugger.model import AuditReport
from tests.fixtures.audit import MIGRATIONS
from tests.ui.helpers import open_app, texts


def _open(store: Path, url: str, module: str | None = None, **query: str) -> AppTest:
    session = {"migrations_module": module} if module else None
    at = open_app(store, url, timeout=60, session=session, **query)
    assert not at.exception, at.exception
    return at


def _text(at: AppTest) -> str:
    """The page's text, as a person reads it: see tests.ui.helpers.texts."""
    return texts(at)


def test_audit_page_shows_verdicts_and_one_runs_findings(audit_runs: Path) -> None:
    at = _open(audit_runs, "audit", MIGRATIONS, run="unknown")
    table = at.dataframe[0].value
    assert {"run_id", "verdict", "errors", "warnings", "next_step"} <= set(table.columns)
    assert dict(zip(table["run_id"], table["verdict"], strict=True))["v0"] == "Restart required"
    assert at.selectbox(key="audit_run").value == "unknown"
    text = _text(at)
    assert "Resumable after checks" in text and "effect-outcome-unknown" in text
    assert "execute step **5**" in text
    verify = at.dataframe[1].value
    assert list(verify["key"]) == ["refund-A-17"]


def test_audit_page_links_findings_to_their_step(audit_runs: Path) -> None:
    at = _open(audit_runs, "audit", MIGRATIONS, run="gap")
    # a page link when the Timeline page is registered, else a plain link to its URL
    links = [str(p.proto) for p in at.get("page_link")]
    links += [str(m.value) for m in at.markdown]
    assert any('query_string: "run=gap&step=4"' in link or "(timeline?run=gap&step=4)" in link
               for link in links), links  # fmt: skip


def test_audit_page_switching_run(audit_runs: Path) -> None:
    at = _open(audit_runs, "audit", MIGRATIONS)
    at.selectbox(key="audit_run").set_value("v0").run()
    assert not at.exception
    assert "Restart required" in _text(at) and "schema-unreachable" in _text(at)
    assert at.query_params["run"] == "v0"  # the URL names the run shown


def test_migrations_page_dry_run_and_side_by_side(audit_runs: Path) -> None:
    at = _open(audit_runs, "migrations", MIGRATIONS, run="v1")
    versions = at.dataframe[0].value
    counts = dict(zip(versions["schema_version"], versions["checkpoints"], strict=True))
    assert (counts["0"], counts["1"], counts["none"]) == (3, 4, 1)
    assert dict(zip(versions["schema_version"], versions["reaches current"], strict=True)) == {
        "0": False,
        "1": True,
        "3": True,
        "none": False,
    }
    at.button(key="migrations_dry_run").click().run()
    assert not at.exception
    report = at.dataframe[1].value
    assert dict(zip(report["version"], report["failed"], strict=True))["1"] == 1
    assert "v1-broken" in at.dataframe[2].value["run"].tolist()
    jsons = at.get("json")
    assert len(jsons) == 2  # stored beside migrated
    assert '"currency"' in jsons[1].proto.body and '"order_id"' in jsons[0].proto.body
    changes = at.dataframe[3].value  # what the migrations changed, path by path
    assert list(changes["path"]) == ["root"]  # DeepDiff: too different to pair keys
    assert '"currency":"EUR"' in changes["migrated"][0]


def test_migrations_page_never_shows_an_unmigratable_state_as_current(audit_runs: Path) -> None:
    at = _open(audit_runs, "migrations", MIGRATIONS, run="v0")
    assert any("Restart required" in e.value for e in at.error)
    assert len(at.get("json")) == 1  # only the stored state


def test_migrations_page_without_a_module_explains_the_setting(audit_runs: Path) -> None:
    at = _open(audit_runs, "migrations")
    assert any("STEPSCOPE_MIGRATIONS" in i.value for i in at.info)


def test_report_type_is_public() -> None:
    assert AuditReport.__dataclass_fields__["verdict"]


def test_audit_page_warns_about_a_store_without_retention(
    sample_native_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the sample's checkpoints are months old and no stepscope.toml sets a [prune] rule
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("STEPSCOPE_CONFIG", raising=False)
    text = _text(_open(sample_native_store, "audit"))
    assert "no-retention" in text and "native.sqlite: 121 checkpoints kept" in text
    assert "no retention rule expires them" in text and "stepscope prune" in text
    # a rule in the settings file ends the warning (the page reads the file again)
    (tmp_path / "stepscope.toml").write_text("[prune]\nolder_than = '180d'\n")
    text = _text(_open(sample_native_store, "audit"))
    assert "no-retention" not in text and "Could each run be resumed safely" in text
