"""Whether a SQL source holds CrewAI's ``flow_states``: asked by the registry before the
flavour (and the runtime rows it builds on) is imported."""

from __future__ import annotations

from loaders.base import SqlReader

STATE_COLUMNS = {"flow_uuid", "method_name", "state_json"}


def is_flow_db(reader: SqlReader) -> bool:
    """True when the reader holds ``flow_states`` with its columns."""
    if "flow_states" not in reader.tables():
        return False
    return set(reader.columns("flow_states")) >= STATE_COLUMNS
