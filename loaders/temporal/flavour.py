"""The Temporal flavour: workflow histories as JSON files (a file, or a directory of them).

Detected from the first file: ``{"events": [...]}`` starting with a workflow-started event.
Each file is one workflow execution, mapped by :class:`loaders.temporal.map.HistoryMap`. A
file that is not a history (not JSON, no events, no started event) is quarantined as one
row naming the file and the reason; its neighbours are imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa

from debugger.json_text import preview
from loaders.base import Flavour, TablePlan, aligned_rows
from loaders.jsonfiles import JsonFilesReader
from loaders.langgraph.flavour import select_all, stable_key, to_batch
from loaders.temporal.decode import attributes, event_type
from loaders.temporal.map import HistoryMap

BATCH_ROWS = 1024


def is_history(doc: Any) -> bool:
    """True for ``{"events": [{... WORKFLOW_EXECUTION_STARTED ...}, ...]}``."""
    events = doc.get("events") if isinstance(doc, dict) else None
    return (
        isinstance(events, list)
        and bool(events)
        and isinstance(events[0], dict)
        and event_type(events[0]) == "WORKFLOW_EXECUTION_STARTED"
    )


def _parse(path: Path, raw: bytes) -> tuple[HistoryMap | None, str | None]:
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        return None, f"{path.name} is not JSON ({e})"
    if not is_history(doc):
        return (
            None,
            f"{path.name} is not a Temporal workflow history (no events, or the "
            "first is not WorkflowExecutionStarted)",
        )
    started = attributes(doc["events"][0])
    # the history names its workflow id since server 1.2x; else the file is named after it
    wid = str(started.get("workflowId") or path.stem)
    run = str(
        started.get("originalExecutionRunId") or started.get("firstExecutionRunId") or path.stem
    )
    return HistoryMap(wid, run, [e for e in doc["events"] if isinstance(e, dict)]), None


class _Walk:
    def __init__(self, reader: JsonFilesReader, batch_rows: int) -> None:
        self.reader = reader
        self.batch_rows = aligned_rows(min(batch_rows, BATCH_ROWS))
        self.effects: list[dict[str, Any]] = []
        self.tape: list[dict[str, Any]] = []

    def checkpoint_batches(self) -> Iterator[pa.RecordBatch]:
        rows: list[dict[str, Any]] = []
        for key, path, raw in self.reader.documents():
            history, reason = _parse(path, raw)
            if history is None:
                rows.append(
                    {
                        "_key": stable_key(str(path), str(key)),
                        "run_id": path.stem,
                        "checkpoint_id": path.name,
                        "_reason": reason,
                        "_raw_text": preview(raw.decode("utf-8", "replace"), 2000),
                    }
                )
            else:
                rows += history.rows()
                self.effects += history.effect_rows()
                self.tape += history.tape_rows()
            while len(rows) >= self.batch_rows:
                yield to_batch("checkpoints", rows[: self.batch_rows])
                rows = rows[self.batch_rows :]
        if rows:
            yield to_batch("checkpoints", rows)

    def batches(self, table: str, rows: list[dict[str, Any]]) -> Iterator[pa.RecordBatch]:
        for i in range(0, len(rows), self.batch_rows):
            yield to_batch(table, rows[i : i + self.batch_rows])


class TemporalFlavour(Flavour[JsonFilesReader]):
    """Workflow histories as ``temporal workflow show --output json`` or the SDK writes them."""

    name = "temporal"

    @classmethod
    def detect(cls, reader: JsonFilesReader) -> bool:
        return is_history(reader.first())

    def plans(self, reader: JsonFilesReader) -> Iterator[TablePlan]:
        walk = _Walk(reader, self.batch_rows)
        yield TablePlan("checkpoints", walk.checkpoint_batches(), select_all("checkpoints"))
        if walk.effects:
            yield TablePlan("effects", walk.batches("effects", walk.effects), select_all("effects"))
        if walk.tape:
            yield TablePlan(
                "tool_calls", walk.batches("tool_calls", walk.tape), select_all("tool_calls")
            )
