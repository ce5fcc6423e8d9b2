"""Payloads and event types as the histories of other SDKs and tools spell them."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from loaders.temporal.decode import event_type, failure_text, payload, payloads
from tests.runtimes.conftest import do_import

DATA = Path(__file__).parent / "data" / "histories"


def _p(encoding: str, data: bytes) -> dict[str, object]:
    return {"metadata": {"encoding": base64.b64encode(encoding.encode()).decode()},
            "data": base64.b64encode(data).decode()}  # fmt: skip


def test_json_null_and_opaque_payloads() -> None:
    assert payload(_p("json/plain", b'{"a": 1}')) == {"a": 1}
    assert payload(_p("binary/null", b"")) is None
    # a codec's or encryption's bytes are never interpreted: their encoding and size only
    assert payload(_p("binary/encrypted", b"\x00\x01secret")) == {
        "encoding": "binary/encrypted", "bytes": 8}  # fmt: skip
    assert payload(_p("json/plain", b"{not json")) == {"encoding": "json/plain", "bytes": 9}
    assert payloads({"payloads": [_p("json/plain", b"1"), _p("json/plain", b"2")]}) == [1, 2]
    assert payloads({}) is None


def test_both_spellings_of_event_types() -> None:
    assert event_type({"eventType": "EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT"}) == (
        "ACTIVITY_TASK_TIMED_OUT"
    )
    assert event_type({"eventType": "ActivityTaskTimedOut"}) == "ACTIVITY_TASK_TIMED_OUT"


def test_failure_text_names_the_causes_without_the_stack() -> None:
    failure = {
        "message": "Activity task failed",
        "stackTrace": "File ...",
        "cause": {"message": "declined", "applicationFailureInfo": {"type": "Card"}},
    }
    assert failure_text(failure) == "Activity task failed: Card: declined"  # fmt: skip


def test_an_older_tools_spelling_imports_the_same(tmp_path: Path) -> None:
    history = json.loads((DATA / "refund-timeout.json").read_text())
    for e in history["events"]:
        name = e["eventType"].removeprefix("EVENT_TYPE_")
        e["eventType"] = "".join(w.capitalize() for w in name.split("_"))
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "refund-timeout.json").write_text(json.dumps(history))
    old = do_import(tmp_path / "old", tmp_path / "old.duckdb")
    new = do_import(DATA / "refund-timeout.json", tmp_path / "new.duckdb")
    assert old.flavour == new.flavour == "temporal"
    assert old.total.imported == new.total.imported
