"""Table plans from a runtime flavour's runs, each already mapped to canonical rows.

A runtime flavour (OpenAI Agents, pydantic-ai, CrewAI) maps one run at a time in Python:
its checkpoints, its tape, and the rows it could not read (each with ``_reason`` and
``_raw_text``, which the store puts in quarantine). This module turns that stream of runs
into the :class:`~loaders.base.TablePlan` objects the importer feeds to the store, with the
batch shape the LangGraph flavour uses (:func:`loaders.langgraph.to_batch`): checkpoints
first, then the tape gathered meanwhile, alternating when the tape grows large so that
memory stays bounded whatever the number of runs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson
import pyarrow as pa

from debugger.contract import GIVEN_STATE_HASH
from debugger.store import state_hash
from loaders.base import BATCH_BYTES, TablePlan, aligned_rows
from loaders.jsonfiles import JsonFilesReader
from loaders.langgraph import select_all, to_batch, to_json
from loaders.langgraph.flavour import stable_key

__all__ = [
    "JsonDocument",
    "RunRows",
    "bad_document",
    "json_documents",
    "parsed_args",
    "plans_of",
    "quarantined",
    "stable_key",
    "tape_row",
    "with_state",
]

TAPE_FLUSH = 20_000
"""Tape rows buffered before the checkpoints pause for them to be written."""
BATCH_ROWS = 1024
"""Checkpoints a batch at most (runtime states are whole conversations: tens of KB)."""
BATCH_STATE_BYTES = BATCH_BYTES
"""State bytes a checkpoint batch at most: a run of 1 MB conversations would otherwise put
a gigabyte in one Arrow batch; a single larger state still goes alone."""


Row = dict[str, Any]


@dataclass
class RunRows:
    """One run's canonical rows."""

    checkpoints: list[Row] = field(default_factory=list)
    """Checkpoint rows (``with_state`` gives each its state text and hash)."""
    tape: list[Row] = field(default_factory=list)
    """``tool_calls`` rows."""


@dataclass(frozen=True)
class JsonDocument:
    """One file of a JSON-file source, as a runtime flavour maps it."""

    name: str
    """The path relative to the source directory (the file name for a single file)."""
    key: int
    """The reader's key of the file (the quarantine's source key)."""
    text: bytes
    """The file's bytes."""
    modified: str
    """The file's modification time (ISO, UTC): when the application saved it."""

    @property
    def stem(self) -> str:
        """``name`` without its ``.json`` suffix: the run id of a file that is one run."""
        return self.name[: -len(".json")] if self.name.lower().endswith(".json") else self.name

    def value(self) -> tuple[Any, str | None]:
        """The document's JSON value, or None and why it is not JSON."""
        try:
            return orjson.loads(self.text), None
        except orjson.JSONDecodeError as e:
            return None, f"not valid JSON ({e})"


def json_documents(reader: JsonFilesReader) -> Iterator[JsonDocument]:
    """The reader's files one at a time, named relative to the source."""
    root = reader.path if reader.path.is_dir() else reader.path.parent
    for key, path, text in reader.documents():
        try:
            mtime = path.stat().st_mtime
        except OSError:
            mtime = 0.0
        modified = datetime.fromtimestamp(mtime, UTC).isoformat()
        yield JsonDocument(path.relative_to(root).as_posix(), key, text, modified)


def parsed_args(text: Any) -> Any:
    """A tool call's arguments given as a JSON string, as a value (the text when not JSON)."""
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def tape_row(
    run_id: str, call_id: str, step: int, seq: int, key: int | None = None, **fields: Any
) -> Row:
    """A ``tool_calls`` row of a runtime flavour with the defaults every flavour shares.

    The key is derived from the run and the call id unless given (stable across re-imports,
    so a re-import updates the row instead of adding one); ``fields`` (``kind``, ``name``,
    ``request``, and any default to override) complete it.
    """
    key = stable_key(run_id, call_id) if key is None else key
    return {"_key": key, "run_id": run_id, "call_id": call_id,
            "step_index": step, "seq": seq, "idempotency_key": None, "is_write": False,
            "error": None, "response": None, **fields}  # fmt: skip


def with_state(row: Row, state_json: bytes) -> Row:
    """Set a checkpoint row's ``working_state`` and the hash the store would compute of it."""
    row["working_state"] = state_json
    row[GIVEN_STATE_HASH] = state_hash.of_text(state_json)
    return row


def quarantined(key: int, run_id: str | None, reason: str, raw: str) -> Row:
    """A checkpoint row that goes to quarantine with ``reason`` (``raw`` describes the input)."""
    return {"_key": key, "run_id": run_id, "_reason": reason, "_raw_text": raw}


def bad_document(doc: JsonDocument, run_id: str, reason: str) -> RunRows:
    """A JSON file the flavour cannot read: one quarantined checkpoint row saying why."""
    raw = to_json({"file": doc.name, "bytes": len(doc.text),
                   "head": doc.text[:2000].decode("utf-8", "replace")}).decode()  # fmt: skip
    return RunRows([quarantined(doc.key, run_id, f"{doc.name}: {reason}", raw)])


class _Plans:
    def __init__(self, runs: Iterator[RunRows], batch_rows: int) -> None:
        self.runs = runs
        self.batch_rows = aligned_rows(min(batch_rows, BATCH_ROWS))
        self.tape: list[Row] = []
        self.done = False

    def checkpoint_batches(self) -> Iterator[pa.RecordBatch]:
        rows: list[Row] = []
        size = 0
        for run in self.runs:
            self.tape += run.tape
            for row in run.checkpoints:
                state = row.get("working_state")
                grows = len(state) if isinstance(state, bytes | str) else 0
                if rows and (len(rows) >= self.batch_rows or size + grows > BATCH_STATE_BYTES):
                    yield to_batch("checkpoints", rows)
                    rows, size = [], 0
                rows.append(row)
                size += grows
            if len(self.tape) >= TAPE_FLUSH:
                break
        else:
            self.done = True
        if rows:
            yield to_batch("checkpoints", rows)

    def tape_batches(self) -> Iterator[pa.RecordBatch]:
        rows, self.tape = self.tape, []
        step = self.batch_rows * 4
        for i in range(0, len(rows), step):
            yield to_batch("tool_calls", rows[i : i + step])


def plans_of(
    runs: Iterator[RunRows], batch_rows: int, total: int | None = None
) -> Iterator[TablePlan]:
    """The plans that import ``runs``: checkpoints, then the tape, until the runs run out."""
    p = _Plans(runs, batch_rows)
    while not p.done:
        yield TablePlan("checkpoints", p.checkpoint_batches(), select_all("checkpoints"),
                        total=total)  # fmt: skip
        if p.tape:
            yield TablePlan("tool_calls", p.tape_batches(), select_all("tool_calls"))
