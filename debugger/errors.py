"""Typed errors with a title and a hint.

Every error a user can cause derives from :class:`StepscopeError`. The CLI prints
``str(error)`` (one line: what is wrong, then what to do) and exits 2 for bad input or 1
for a failure; the app shows the same line in one ``st.error``. Driver errors are converted
where they happen (``raise SourceError(...) from e``) so no traceback reaches a user.
"""

from __future__ import annotations

import re

REDACTED = "***"
"""What a keyword string's password is replaced with wherever it would be shown."""

# scheme://userinfo@rest, up to the end of the token: the userinfo runs to the LAST "@",
# because a password may hold an unencoded "@", "/", "?" or "#" (libpq splits it elsewhere,
# so no parse of the URL can be trusted to find where the password ends), and a few
# spaces. This errs on the side of hiding: a message's words may go with a password.
_URL = re.compile(
    r"(?P<scheme>\b[a-z][a-z0-9+.-]*://)"
    r"(?P<token>[^\s'\"@]*(?:[ \t][^\s'\"@]*){0,3}@[^\s'\"]*|[^\s'\"]*)",
    re.I,
)
# password=... in a keyword string or a URL's query: a quoted value (quotes escaped with
# a backslash; a quote not followed by a space or punctuation does not close it, and an
# unterminated one runs to the end), or a bare one up to a space or "&"
_KEYWORD = re.compile(
    r"(?P<key>\b(?:ssl)?password\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.|'(?![\s&;,.)]|$))*(?:'|$)|[^\s&]*)",
    re.I,
)


def _redact_url(m: re.Match[str]) -> str:
    token = m["token"]
    at = token.rfind("@")
    userinfo = token[:at] if at >= 0 else ""
    if ":" not in userinfo:
        return m[0]
    user = userinfo.split(":", 1)[0]
    return f"{m['scheme']}{user}{token[at:]}"  # no password: libpq then asks ~/.pgpass


def redact(text: str) -> str:
    """``text`` with the password of every connection string in it left out.

    The one place passwords are removed from what Stepscope shows: errors (every
    :class:`StepscopeError` redacts its message and hint), the ``sources`` table, reports,
    the app and ``--json``. It knows URLs of any scheme in any case
    (``POSTGRESQL://u:p/w@h/db`` -> ``POSTGRESQL://u@h/db``, still a URL to reuse) and libpq
    keyword strings (``host=h password='a b'`` -> ``host=h password=***``), and
    ``password=`` in a URL's query.
    """
    # keywords first: a password in a URL's query may hold an "@" the URL rule would take
    # for the end of a userinfo
    return _URL.sub(_redact_url, _KEYWORD.sub(lambda m: m["key"] + REDACTED, text))


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
        message, hint = redact(message), redact(hint)  # a connection string may be echoed
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
