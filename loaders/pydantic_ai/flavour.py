"""The pydantic-ai flavour: message histories saved as JSON, one run a file.

pydantic-ai has no store of its own: an application keeps ``result.all_messages_json()``
(``ModelMessagesTypeAdapter``'s JSON list of requests and responses) wherever it likes. A
run that paused for approval also needs its ``DeferredToolRequests`` to resume; pydantic-ai
has no file format for the pair, so Stepscope reads ``{"messages": [...],
"deferred_tool_requests": {...}}`` (the two dumped with pydantic's JSON) as a paused run,
and an integer ``schema_version`` beside the messages as the state's version.
A JSON file, or a directory of them, is read one file at a time and mapped by
:mod:`loaders.pydantic_ai.map`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from debugger.errors import FlavourError
from loaders.base import Flavour, TablePlan
from loaders.jsonfiles import JsonFilesReader
from loaders.langgraph.map import idempotency_args
from loaders.pydantic_ai.map import is_message, map_history
from loaders.runtime_rows import RunRows, bad_document, json_documents, plans_of

NOT_A_HISTORY = "not a pydantic-ai message history (a list of requests and responses)"


@dataclass(frozen=True)
class History:
    """What one file holds."""

    messages: list[dict[str, Any]]
    deferred: dict[str, Any] | None = None
    """The ``DeferredToolRequests`` a paused run waits on."""
    schema_version: int | None = None
    """The application's own ``schema_version`` saved beside the messages."""


def history_of(value: Any) -> History | None:
    """A document's history, or None when it is neither a message list nor ``{"messages"}``."""
    deferred, version = None, None
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        raw = value.get("deferred_tool_requests")
        deferred = raw if isinstance(raw, dict) else None
        given = value.get("schema_version")
        version = given if isinstance(given, int) and not isinstance(given, bool) else None
        value = value["messages"]
    if isinstance(value, list) and value and all(is_message(m) for m in value):
        return History(value, deferred, version)
    return None


def _runs(reader: JsonFilesReader, names: tuple[str, ...]) -> Iterator[RunRows]:
    for doc in json_documents(reader):
        value, problem = doc.value()
        found = history_of(value) if problem is None else None
        if found is None:
            problem = (
                problem or "not a pydantic-ai message history (a list of requests and responses)"
            )
            yield bad_document(doc, doc.stem, problem)
            continue
        yield map_history(doc, found.messages, found.deferred, names, found.schema_version)


class PydanticAIFlavour(Flavour[JsonFilesReader]):
    """Message histories of pydantic-ai (``all_messages_json()``), one run a file."""

    name = "pydantic-ai"

    @classmethod
    def detect(cls, reader: JsonFilesReader) -> bool:
        return history_of(reader.first()) is not None

    def check(self, reader: JsonFilesReader) -> None:
        if not isinstance(reader, JsonFilesReader):
            raise FlavourError("pydantic-ai histories are JSON files", "use --flavor auto")

    def plans(self, reader: JsonFilesReader) -> Iterator[TablePlan]:
        total = reader.count(reader.tables()[0])
        yield from plans_of(_runs(reader, idempotency_args()), self.batch_rows, total)
