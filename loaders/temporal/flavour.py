"""The Temporal flavour: workflow histories as JSON files (a file, or a directory of them).

Detected from the first file: ``{"events": [...]}`` starting with a workflow-started event.
Each file is one workflow execution, mapped by :class:`loaders.temporal.map.HistoryMap`;
:func:`loaders.runtime_rows.plans_of` turns the histories into the importer's plans, and the
activities' effect rows follow. A file that is not a history (not JSON, no events, no
started event) is quarantined as one row naming the file and the reason; its neighbours are
imported.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from loaders.base import Flavour, TablePlan
from loaders.jsonfiles import JsonFilesReader
from loaders.langgraph import select_all, to_batch
from loaders.runtime_rows import JsonDocument, RunRows, bad_document, json_documents, plans_of
from loaders.temporal.decode import attributes, event_type
from loaders.temporal.map import HistoryMap

EFFECT_BATCH = 4096


def is_history(doc: Any) -> bool:
    """True for ``{"events": [{... WORKFLOW_EXECUTION_STARTED ...}, ...]}``."""
    events = doc.get("events") if isinstance(doc, dict) else None
    return (
        isinstance(events, list) and bool(events) and isinstance(events[0], dict)
        and event_type(events[0]) == "WORKFLOW_EXECUTION_STARTED"
    )  # fmt: skip


def history_of(doc: JsonDocument) -> tuple[HistoryMap | None, str | None]:
    """The document's history, or None and why it is not one."""
    value, why = doc.value()
    if why:
        return None, why
    if not is_history(value):
        return None, "not a Temporal workflow history (no events, or the first is not " \
            "WorkflowExecutionStarted)"  # fmt: skip
    started = attributes(value["events"][0])
    # the history names its workflow id since server 1.2x; else the file is named after it
    wid = str(started.get("workflowId") or doc.stem)
    run = str(started.get("originalExecutionRunId") or started.get("firstExecutionRunId")
              or doc.stem)  # fmt: skip
    return HistoryMap(wid, run, [e for e in value["events"] if isinstance(e, dict)]), None


class TemporalFlavour(Flavour[JsonFilesReader]):
    """Workflow histories as ``temporal workflow show --output json`` or the SDK writes them."""

    name = "temporal"

    @classmethod
    def detect(cls, reader: JsonFilesReader) -> bool:
        return is_history(reader.first())

    def plans(self, reader: JsonFilesReader) -> Iterator[TablePlan]:
        # one row an activity: kept until the histories are read, then written
        effects: list[dict[str, Any]] = []

        def histories() -> Iterator[RunRows]:
            for doc in json_documents(reader):
                history, why = history_of(doc)
                if history is None:
                    yield bad_document(doc, doc.stem, str(why))
                    continue
                rows = history.rows()  # walks the events: effects and tape are known after
                effects.extend(history.effect_rows())
                yield RunRows(rows, history.tape_rows())

        yield from plans_of(histories(), self.batch_rows, reader.count("documents"))
        if effects:
            batches = (to_batch("effects", effects[i : i + EFFECT_BATCH])
                       for i in range(0, len(effects), EFFECT_BATCH))  # fmt: skip
            yield TablePlan("effects", batches, select_all("effects"))
