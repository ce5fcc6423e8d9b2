"""No form of a Postgres connection string ever shows its password, on any surface.

A table of nasty connection strings (unencoded ``/``, ``@``, ``:``, ``?``, ``#`` and spaces
in the password, schemes in any case, libpq keyword strings with quoted passwords, a
password in the query string) is run through the redaction itself, through ``stepscope
import`` against a closed port (the error line, ``--json``), and, with a role whose password
holds those characters on the real server, through a successful import: the CLI's output
and ``--json``, the ``sources`` table, the store file's bytes, ``stepscope runs`` and
``stepscope sql``, and the app's Import page.
"""

from __future__ import annotations

import socket
import uuid
from pathlib import Path
from urllib.parse import quote, urlsplit

import psycopg
import pytest

from debugger.errors import SourceError, redact
from debugger.store import Store
from loaders.kinds import is_postgres_source, postgres_conninfo
from tests.fixtures.native import effect_rows, native_rows, stepscope, tool_call_rows
from tests.fixtures.pg import PgServer, write_native_postgres
from tests.ui.helpers import frames_text, open_app, texts

# Distinct fragments, so a password printed in part is caught too.
SECRET_PARTS = ("Xq7v", "Zr9k", "Wm3j")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def nasty(port: int) -> list[str]:
    """Connection strings whose password is made of SECRET_PARTS and awkward characters."""
    a, b, c = SECRET_PARTS
    h = f"127.0.0.1:{port}"
    return [
        f"postgresql://u:{a}/{b}@{h}/db",
        f"postgresql://u:{a}@{b}@{h}/db",
        f"postgresql://u:{a}:{b}@{h}/db",
        f"postgresql://u:{a}?{b}#{c}@{h}/db",
        f"postgresql://u:{a}/{b}@{c}@{h}/db?sslmode=disable",
        f"postgresql://u:{a} {b}@{h}/db",
        f"POSTGRESQL://u:{a}/{b}@{h}/db",
        f"PostgreS://u:{a}@{b}@{h}/db",
        f"postgres://u:{a}%2F{b}@{h}/db",
        f"postgresql://{h}/db?user=u&password={a}/{b}",
        f"postgresql://{h}/db?password={a}@{b}&user=u",
        f"host=127.0.0.1 port={port} dbname=db user=u password={a}/{b}@{c}",
        f"host=127.0.0.1 port={port} user=u password='{a} {b} {c}' dbname=db",
        f"host=127.0.0.1 port={port} user=u password = '{a}\\' {b}' dbname=db",
        f"HOST=127.0.0.1 PORT={port} USER=u PASSWORD={a}{b}",
        f"dbname=db password='{a} {b}",  # an unterminated quote
        f"user=u sslpassword={a} password={b} host=127.0.0.1 port={port}",
    ]


CASES = nasty(_free_port())


def _leaks(text: str) -> list[str]:
    return [part for part in SECRET_PARTS if part in text]


@pytest.mark.parametrize("source", CASES)
def test_redaction_removes_every_fragment_of_the_password(source: str) -> None:
    assert not _leaks(redact(source))
    assert not _leaks(redact(f"error: cannot open {source}. Hint: check {source}."))


@pytest.mark.parametrize("source", CASES)
def test_every_form_is_taken_for_postgres(source: str) -> None:
    assert is_postgres_source(source)
    assert postgres_conninfo(source).startswith(("postgresql://", "postgres://", *"hHdu"))


def test_files_are_not_taken_for_postgres(tmp_path: Path) -> None:
    odd = tmp_path / "host=x.sqlite"
    odd.write_bytes(b"")
    assert not is_postgres_source(str(odd))
    assert not is_postgres_source("sample_checkpoints/data/native.sqlite")
    assert not is_postgres_source("postgresql.sqlite")


def test_an_error_never_carries_a_password() -> None:
    a, b, _ = SECRET_PARTS
    error = SourceError(f"no such file: postgresql://u:{a}/{b}@h/db", f"password={a}")
    assert not _leaks(str(error)) and not _leaks(error.message + error.hint)


@pytest.mark.parametrize("source", CASES)
@pytest.mark.parametrize("as_json", [False, True])
def test_a_failed_import_prints_one_line_without_the_password(
    source: str, as_json: bool, tmp_path: Path
) -> None:
    store = tmp_path / "s.duckdb"
    result = stepscope("import", source, "--store", store, *(["--json"] if as_json else []))
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert "no such file" not in result.stderr  # taken for Postgres, not for a path
    assert not _leaks(result.stdout + result.stderr)
    assert not store.exists()


@pytest.fixture(scope="module")
def nasty_role(pg_server: PgServer) -> tuple[str, str, str]:
    """A database with native rows, and a role whose password holds ``/ @ : ? # '`` and spaces.

    Returns the role, its password and the database's URL as the superuser.
    """
    url = pg_server.create_database("secrets")
    write_native_postgres(url, native_rows(), effect_rows(), tool_call_rows())
    role = f"r_{uuid.uuid4().hex[:8]}"
    a, b, c = SECRET_PARTS
    password = f"{a}/{b}@{c}:? #'x"
    with psycopg.connect(url, autocommit=True) as con:
        literal = password.replace("'", "''")
        con.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{literal}'")
        con.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    return role, password, url


def _role_sources(role: str, password: str, url: str) -> list[str]:
    u = urlsplit(url)
    host, port, db = u.hostname, u.port, u.path.lstrip("/")
    quoted = password.replace("\\", "\\\\").replace("'", "\\'")
    return [
        f"postgresql://{role}:{quote(password, safe='')}@{host}:{port}/{db}",
        f"POSTGRESQL://{role}:{quote(password, safe='')}@{host}:{port}/{db}",
        f"host={host} port={port} dbname={db} user={role} password='{quoted}'",
    ]


def _surfaces(store: Path) -> str:
    """Everything the store lets a user see about its sources."""
    shown = [
        stepscope("runs", "--store", store, "--json").stdout,
        stepscope("sql", "SELECT * FROM sources", "--store", store, "--json").stdout,
    ]
    with Store.open(store, read_only=True) as s:
        shown.append(s.sources().to_string())
    return "\n".join(shown)


@pytest.mark.postgres
@pytest.mark.parametrize("which", [0, 1, 2])
def test_a_successful_import_keeps_the_password_everywhere_out(
    nasty_role: tuple[str, str, str], which: int, tmp_path: Path
) -> None:
    role, password, url = nasty_role
    source = _role_sources(role, password, url)[which]
    store = tmp_path / "s.duckdb"
    for args in ((), ("--json",)):
        result = stepscope("import", source, "--store", store, *args)
        assert result.exit_code == 0, result.stderr
        assert not _leaks(result.stdout + result.stderr)
        assert quote(password, safe="") not in result.stdout
    assert not _leaks(_surfaces(store))
    assert not any(p.encode() in store.read_bytes() for p in SECRET_PARTS)
    with Store.open(store, read_only=True) as s:
        assert sorted(s.runs()["run_id"]) == ["run-0", "run-1", "run-2"]


@pytest.mark.postgres
def test_a_wrong_unencoded_password_fails_without_showing_it(
    nasty_role: tuple[str, str, str], tmp_path: Path
) -> None:
    role, password, url = nasty_role
    u = urlsplit(url)
    raw = f"postgresql://{role}:{password}@{u.hostname}:{u.port}{u.path}"  # not encoded
    result = stepscope("import", raw, "--store", tmp_path / "s.duckdb")
    assert result.exit_code == 2 and result.stderr.count("\n") == 1
    assert not _leaks(result.stderr + result.stdout)


@pytest.mark.postgres
def test_the_app_import_page_shows_no_password(
    nasty_role: tuple[str, str, str], tmp_path: Path
) -> None:
    role, password, url = nasty_role
    store = tmp_path / "app.duckdb"
    at = open_app(store, "import", timeout=120)
    at.radio(key="import_kind").set_value("A Postgres URL").run()
    for source in _role_sources(role, password, url)[1:]:
        at.text_input(key="import_url").set_value(source).run()
        at.button(key="import_go").click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        assert not _leaks(texts(at) + frames_text(at))
    bad = f"postgresql://{role}:{password}@{urlsplit(url).hostname}:1/x"
    at.text_input(key="import_url").set_value(bad).run()
    at.button(key="import_go").click().run()
    assert at.error and not _leaks(" ".join(str(e.value) for e in at.error))
