"""The OpenAI Agents SDK flavour: session databases and saved ``RunState`` files.

Two sources, one runtime: a SQLite file with ``SQLiteSession``'s tables (``agent_sessions``,
``agent_messages``; ``AdvancedSQLiteSession``'s ``message_structure`` and ``turn_usage``
when present), read by :mod:`loaders.openai_agents.session` and mapped a checkpoint per
turn by :mod:`loaders.openai_agents.map`; or a JSON file, or a directory of them, each a
``RunState`` the application saved at an approval pause
(:mod:`loaders.openai_agents.runstate`).
"""

from __future__ import annotations

from collections.abc import Iterator

from debugger.errors import FlavourError
from loaders.base import Flavour, SourceReader, SqlReader, TablePlan
from loaders.jsonfiles import JsonFilesReader
from loaders.langgraph.map import idempotency_args
from loaders.openai_agents.map import map_session
from loaders.openai_agents.runstate import is_run_state, map_run_state
from loaders.openai_agents.session import SessionTables, is_session_db
from loaders.runtime_rows import RunRows, bad_document, json_documents, plans_of


def _run_states(reader: JsonFilesReader, names: tuple[str, ...]) -> Iterator[RunRows]:
    for doc in json_documents(reader):
        value, problem = doc.value()
        if problem is None and not is_run_state(value):
            problem = "not a RunState (no $schemaVersion and current_turn)"
        if problem is not None:
            yield bad_document(doc, doc.stem, problem)
            continue
        yield map_run_state(doc, value, names)


class OpenAIAgentsFlavour(Flavour[SourceReader]):
    """Sessions (SQLiteSession, AdvancedSQLiteSession) and RunState files of the Agents SDK."""

    name = "openai-agents"
    reads = "an agent-session SQLite file or RunState JSON files"

    @classmethod
    def fits(cls, reader: SourceReader) -> bool:
        return isinstance(reader, SqlReader | JsonFilesReader)

    @classmethod
    def detect(cls, reader: SourceReader) -> bool:
        if isinstance(reader, SqlReader):
            return is_session_db(reader)
        if isinstance(reader, JsonFilesReader):
            return is_run_state(reader.first())
        return False

    def check(self, reader: SourceReader) -> None:
        if isinstance(reader, JsonFilesReader):
            return
        if not (isinstance(reader, SqlReader) and is_session_db(reader)):
            raise FlavourError(
                "not an OpenAI Agents session database (needs agent_sessions and "
                "agent_messages with id, session_id, message_data)",
                "use --flavor auto",
            )

    def plans(self, reader: SourceReader) -> Iterator[TablePlan]:
        self.check(reader)
        names = idempotency_args()
        if isinstance(reader, JsonFilesReader):
            total = reader.count(reader.tables()[0])
            yield from plans_of(_run_states(reader, names), self.batch_rows, total)
            return
        assert isinstance(reader, SqlReader)
        tables = SessionTables(reader)
        runs = (map_session(run, names) for run in tables.runs())
        yield from plans_of(runs, self.batch_rows)
