"""Typed errors with a title and a hint.

Every error a user can cause derives from :class:`StepscopeError`. The CLI prints
``str(error)`` (one line: what is wrong, then what to do) and exits 2 for bad input or 1
for a failure; the app shows the same line in one ``st.error``. Driver errors are converted
where they happen (``raise SourceError(...) from e``) so no traceback reaches a user.
"""

from __future__ import annotations


class StepscopeError(Exception):
    """Base of every user-facing error.

    Attributes:
        message: what is wrong, in one sentence.
        hint: what to do about it, in one sentence.
        exit_code: 2 when the user's input is at fault, 1 for a failure of the tool.
    """

    title = "Stepscope error"
    exit_code = 2

    def __init__(self, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.message = message.rstrip(".")
        self.hint = hint.rstrip(".")

    def __str__(self) -> str:
        line = self.message + "."
        if self.hint:
            line += f" Hint: {self.hint}."
        return " ".join(line.split())  # always one line


class SourceError(StepscopeError):
    """A source cannot be opened or read: missing, corrupt, wrong kind, no access."""

    title = "Cannot read the source"


class FlavourError(SourceError):
    """The source's tables do not match the requested or any known flavour."""

    title = "Unknown source shape"


class MappingError(StepscopeError):
    """A mapping file is missing, not TOML, or names tables and columns that do not exist."""

    title = "Bad mapping file"


class DecodeError(StepscopeError):
    """A stored value cannot be decoded (pickle, encrypted, corrupt bytes)."""

    title = "Cannot decode a value"


class StoreError(StepscopeError):
    """The store cannot be opened, is locked, or is of an unknown schema version."""

    title = "Store problem"


class NotFound(StepscopeError):
    """A run, step or checkpoint asked for is not in the store."""

    title = "Not found"


class MigrationError(StepscopeError):
    """A state-schema migration failed or no migration path exists."""

    title = "Migration problem"


class SandboxViolation(StepscopeError):
    """A replayed agent tried to reach outside its sandbox (network, real writes)."""

    title = "Sandbox violation"
    exit_code = 1


class ReplayError(StepscopeError):
    """A replay could not be set up or did not finish."""

    title = "Replay problem"
    exit_code = 1
