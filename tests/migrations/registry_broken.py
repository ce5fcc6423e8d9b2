"""A migrations module whose names skip a version (v1_to_v3): rejected when loaded."""

CURRENT_VERSION = 3


def v1_to_v3(state: dict[str, object]) -> dict[str, object]:
    """Skips version 2."""
    return state
