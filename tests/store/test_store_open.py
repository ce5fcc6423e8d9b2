"""Opening the store: context manager, read-only, its own schema version, locking."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

import debugger
import debugger.store as store_module
from debugger.errors import StoreError
from debugger.store import Store, schema
from tests.fixtures.native import native_rows, stepscope, write_native_sqlite


def test_store_open_is_a_context_manager_that_closes(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.duckdb") as store:
        assert store.schema_version() == schema.CURRENT_VERSION
        assert store.runs().empty
    with pytest.raises(duckdb.Error):
        store._con.execute("SELECT 1")


def test_debugger_open_returns_a_read_only_store(tmp_path: Path) -> None:
    Store.open(tmp_path / "s.duckdb").close()
    with debugger.open(tmp_path / "s.duckdb") as store:
        assert isinstance(store, Store) and store.read_only
        with (
            pytest.raises(StoreError, match="read-only"),
            store.import_session("sqlite", "native", "x"),
        ):
            pass
        with pytest.raises(duckdb.Error):
            store._con.execute("INSERT INTO run_keys VALUES ('x', 1)")


def test_read_only_open_of_a_missing_store_is_refused_without_creating_it(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no store at"):
        debugger.open(tmp_path / "missing.duckdb")
    assert not (tmp_path / "missing.duckdb").exists()


def test_default_store_is_env_then_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store.open() as store:
        assert Path(store.path).resolve() == tmp_path / "stepscope.duckdb"
    monkeypatch.setenv("STEPSCOPE_STORE", str(tmp_path / "env.duckdb"))
    with Store.open() as store:
        assert store.path == str(tmp_path / "env.duckdb")


def test_migrations_are_recorded_one_row_each(tmp_path: Path) -> None:
    with Store.open(tmp_path / "s.duckdb") as store:
        rows = store._con.execute("SELECT version, name FROM store_migrations").fetchall()
    assert [r[0] for r in rows] == [m.version for m in schema.MIGRATIONS]
    assert schema.MIGRATIONS[-1].version == schema.CURRENT_VERSION
    versions = [m.version for m in schema.MIGRATIONS]
    assert versions == list(range(1, len(versions) + 1))  # append-only, no gaps


def _catalog(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[object, ...]]]:
    """Every object of the store's schema as DuckDB writes it back (compression included)."""
    db = "database_name = current_database()"
    return {
        what: con.execute(f"SELECT {cols} FROM duckdb_{what}() WHERE {db} ORDER BY 1").fetchall()
        for what, cols in [
            ("tables", "table_name, sql"),
            ("views", "view_name, sql"),
            ("indexes", "index_name, sql"),
            ("sequences", "sequence_name, start_value, increment_by"),
        ]
    } | {
        "macros": con.execute(
            f"SELECT function_name, macro_definition FROM duckdb_functions() WHERE {db} "
            "AND NOT internal ORDER BY 1"
        ).fetchall(),
        "migrations": con.execute(
            "SELECT version, name FROM store_migrations ORDER BY 1"
        ).fetchall(),
    }


def test_a_new_store_built_at_once_equals_one_migrated_step_by_step(tmp_path: Path) -> None:
    """A new store gets its schema in one step (FRESH_SCHEMA); it must be exactly what
    running every migration on an empty file gives."""
    _store_at(tmp_path / "stepwise.duckdb", schema.CURRENT_VERSION)
    with Store.open(tmp_path / "fresh.duckdb") as fresh:
        built = _catalog(fresh._con)
    con = duckdb.connect(str(tmp_path / "stepwise.duckdb"), read_only=True)
    stepwise = _catalog(con)
    con.close()
    assert built == stepwise
    assert schema.FRESH_SCHEMA[0] <= schema.CURRENT_VERSION
    assert [v for v, _ in built["migrations"]] == [m.version for m in schema.MIGRATIONS]


def test_a_migration_after_the_fresh_schema_runs_on_a_new_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nxt = schema.CURRENT_VERSION + 1

    def add_note(con: duckdb.DuckDBPyConnection) -> None:
        con.execute("ALTER TABLE runs ADD COLUMN note VARCHAR")

    monkeypatch.setattr(
        schema, "MIGRATIONS", [*schema.MIGRATIONS, schema.StoreMigration(nxt, "note", add_note)]
    )
    monkeypatch.setattr("debugger.store.CURRENT_VERSION", nxt)
    with Store.open(tmp_path / "s.duckdb") as store:
        assert store.schema_version() == nxt
        assert "note" in [r[0] for r in store._con.execute("DESCRIBE runs").fetchall()]


def _store_at(path: Path, version: int) -> None:
    """A store file as an older Stepscope left it: migrations up to ``version`` applied."""
    con = duckdb.connect(str(path))
    con.execute(
        "CREATE TABLE store_migrations (version INTEGER, name VARCHAR, applied_at TIMESTAMP)"
    )
    for m in schema.MIGRATIONS:
        if m.version <= version:
            m.apply(con)
            con.execute("INSERT INTO store_migrations VALUES (?, ?, now())", [m.version, m.name])
    con.close()


def test_a_store_one_version_behind_is_migrated_on_a_writable_open(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    _store_at(path, schema.CURRENT_VERSION - 1)
    with pytest.raises(StoreError, match="needs migrating"):
        debugger.open(path)
    with Store.open(path) as store:
        assert store.schema_version() == schema.CURRENT_VERSION
    with debugger.open(path) as store:
        assert store.runs().empty


def test_a_pending_migration_runs_in_a_transaction_with_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.duckdb"
    src = write_native_sqlite(tmp_path / "n.sqlite", native_rows())
    assert stepscope("import", src, "--store", path).exit_code == 0
    nxt = schema.CURRENT_VERSION + 1

    def broken(con: duckdb.DuckDBPyConnection) -> None:
        con.execute("ALTER TABLE runs ADD COLUMN note VARCHAR")
        raise RuntimeError("half-way")

    def add_note(con: duckdb.DuckDBPyConnection) -> None:
        con.execute("ALTER TABLE runs ADD COLUMN note VARCHAR")

    monkeypatch.setattr(
        schema, "MIGRATIONS", [*schema.MIGRATIONS, schema.StoreMigration(nxt, "x", broken)]
    )
    monkeypatch.setattr("debugger.store.CURRENT_VERSION", nxt)
    with pytest.raises(RuntimeError, match="half-way"):
        Store.open(path)
    con = duckdb.connect(str(path), read_only=True)
    assert "note" not in [r[0] for r in con.execute("DESCRIBE runs").fetchall()]
    assert schema.applied_version(con) == nxt - 1
    con.close()

    monkeypatch.setattr(
        schema,
        "MIGRATIONS",
        [*schema.MIGRATIONS[:-1], schema.StoreMigration(nxt, "note", add_note)],
    )
    with Store.open(path) as store:
        assert store.schema_version() == nxt
        assert len(store.run_records()) == 3  # data kept
        assert store._con.execute("SELECT count(note) FROM runs").fetchone() == (0,)


def test_a_store_from_a_newer_stepscope_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "new.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    con.execute(
        "INSERT INTO store_migrations VALUES (?, 'future', now())", [schema.CURRENT_VERSION + 1]
    )
    con.close()
    for read_only in (True, False):
        with pytest.raises(StoreError, match="newer than this Stepscope knows"):
            Store.open(path, read_only=read_only)
    result = stepscope("runs", "--store", path)
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "upgrade Stepscope" in result.stderr


@pytest.mark.parametrize(
    "content",
    [b"not a database at all\n", b"SQLite format 3\x00" + b"\x00" * 100],
    ids=["text", "sqlite-file"],
)
def test_a_file_that_is_not_a_store(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "notes.duckdb"
    path.write_bytes(content)
    for args in (
        ["runs"],
        ["show", "r"],
        ["import", str(write_native_sqlite(tmp_path / "n.sqlite", native_rows()))],
    ):
        result = stepscope(*args, "--store", path)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
        assert "Traceback" not in result.stderr
        # a SQLite file must not send DuckDB off to download its SQLite extension
        assert "is not a Stepscope store" in result.stderr
        assert "download" not in result.stderr
    assert path.read_bytes() == content
    with pytest.raises(StoreError, match="it is a SQLite database"):
        Store.open(write_native_sqlite(tmp_path / "src.sqlite", native_rows()))


HOLDER = textwrap.dedent(
    """
    import sys
    from debugger.store import Store
    store = Store.open(sys.argv[1])
    print("ready", flush=True)
    sys.stdin.read()
    store.close()
    """
)


def test_an_open_waits_for_another_process_s_brief_hold(tmp_path: Path) -> None:
    """The app holds the store only while it reads: an import (or any open) started then
    waits for the lock to go, up to ``LOCK_WAIT_S``, instead of failing."""
    path = tmp_path / "s.duckdb"
    Store.open(path).close()
    repo = Path(__file__).resolve().parents[2]
    brief = HOLDER.replace("sys.stdin.read()", "import time; time.sleep(0.8)")
    holder = subprocess.Popen([sys.executable, "-c", brief, str(path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, cwd=repo)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        started = time.monotonic()
        with Store.open(path) as store:  # for writing: any other holder locks it out
            waited = time.monotonic() - started
            assert store.runs().empty
    finally:
        holder.communicate("", timeout=30)
    assert 0.2 < waited < store_module.LOCK_WAIT_S


def test_a_store_held_for_writing_elsewhere_gives_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the lock is held throughout: the wait for it to go is cut short (tested on its own)
    monkeypatch.setattr(store_module, "LOCK_WAIT_S", 0.2)
    path = tmp_path / "s.duckdb"
    Store.open(path).close()
    repo = Path(__file__).resolve().parents[2]
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=repo,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        with pytest.raises(StoreError, match="open for writing in another process"):
            Store.open(path, read_only=True)
        with pytest.raises(StoreError, match="is open in another process"):
            Store.open(path, read_only=False)
        result = stepscope("runs", "--store", path)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1
        assert "another process" in result.stderr
    finally:
        holder.communicate("", timeout=30)
    with debugger.open(path) as store:  # released
        assert store.runs().empty


def test_importing_into_a_store_the_app_reads_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "LOCK_WAIT_S", 0.2)
    path = tmp_path / "s.duckdb"
    Store.open(path).close()
    repo = Path(__file__).resolve().parents[2]
    reader = subprocess.Popen(
        [sys.executable, "-c", HOLDER.replace("Store.open(sys.argv[1])",
                                              "Store.open(sys.argv[1], read_only=True)"),
         str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=repo,
    )  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
        src = write_native_sqlite(tmp_path / "n.sqlite", native_rows())
        result = stepscope("import", src, "--store", path)
        assert result.exit_code == 2 and result.stderr.count("\n") == 1
        assert (
            "is open in another process" in result.stderr and "close the notebook" in result.stderr
        )
    finally:
        reader.communicate("", timeout=30)


def test_a_failed_import_leaves_the_connection_settings_as_they_were(tmp_path: Path) -> None:
    """The import caps DuckDB's memory while it runs; a source failing part-way restores it."""
    from debugger.errors import SourceError
    from debugger.store import Store

    with Store.open(tmp_path / "s.duckdb") as store:
        before = store._con.execute("SELECT current_setting('memory_limit')").fetchone()
        with pytest.raises(SourceError), store.import_session("sqlite", "native", "x"):
            raise SourceError("the source broke part-way", "check it")
        after = store._con.execute("SELECT current_setting('memory_limit')").fetchone()
    assert after == before


@pytest.mark.parametrize("large", [False, True])
def test_memory_is_handed_back_only_once_an_import_is_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, large: bool
) -> None:
    """The memory bounds (buffer pool, write buffers, the allocator handing memory back)
    are set once an import has read LARGE_IMPORT_BYTES (a small import skips their cost);
    either way the settings are put back after it."""
    import loaders.sqlite
    from debugger.store import session
    from loaders import ImportOptions, import_source

    monkeypatch.setattr(loaders.sqlite, "BATCH_BYTES", 20_000)  # several batches
    if large:
        monkeypatch.setattr(session, "LARGE_IMPORT_BYTES", 30_000)
    source = write_native_sqlite(tmp_path / "n.sqlite", native_rows(4, 40))
    query = "SELECT " + ", ".join(f"current_setting('{n}')" for n in session.LARGE_IMPORT_SETTINGS)
    with Store.open(tmp_path / "s.duckdb") as store:
        before = store._con.execute(query).fetchall()[0]
        seen: list[tuple[object, ...]] = []

        def progress(table: str, done: int, total: int | None) -> None:
            seen.append(store._con.execute(query).fetchall()[0])

        import_source(store, str(source), ImportOptions(progress=progress))
        after = store._con.execute(query).fetchall()[0]
    assert after == before
    assert len(seen) > 2 and seen[0] == before  # the first batch is under it either way
    tight = [_size(v) for v in session.LARGE_IMPORT_SETTINGS.values()]
    assert ([_size(str(v)) for v in seen[-1]] == tight) is large
    assert (seen[-1] == before) is not large


def _size(text: str) -> int:
    """A DuckDB size setting in MiB, from any of the forms it gives back ("32MB",
    "61.0 MiB", "134217728B"; a count such as "1" is taken as is)."""
    number, unit = re.fullmatch(r"([0-9.]+)\s*([KMG]i?B|B|)", text).groups()  # type: ignore[union-attr]
    if not unit:
        return int(number)
    scale = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9,
             "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[unit]  # fmt: skip
    return round(float(number) * scale / 2**20)


def test_v3_rehashes_states_and_renames_content_named_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store imported with MD5 state hashes (store version 2) is re-hashed with XXH3-128;
    checkpoints named after their content get the names a fresh import gives them, parents
    and run heads follow, and re-importing the source finds every row already present."""
    import contextlib
    import sqlite3

    import xxhash

    from debugger.store import state_hash
    from loaders import import_source

    rows = native_rows(runs=3, steps=6)
    rows[4]["working_state"] = '{"big": "' + "x" * 40_000 + '"}'  # a large state
    src = write_native_sqlite(tmp_path / "n.sqlite", rows)
    lite = sqlite3.connect(src)  # one checkpoint named by its source: kept as it is
    lite.execute("ALTER TABLE checkpoints ADD COLUMN checkpoint_id TEXT")
    lite.execute(
        "UPDATE checkpoints SET checkpoint_id = 'given-7' WHERE run_id = 'run-1' AND step_index = 1"
    )
    lite.commit()
    lite.close()
    query = (
        "SELECT run_id, step_index, checkpoint_id, parent_id, state_hash "
        "FROM checkpoints ORDER BY run_id, step_index"
    )

    def fresh() -> list[tuple[object, ...]]:
        with Store.open(tmp_path / "fresh.duckdb") as store:
            import_source(store, str(src))
            return store._con.execute(query).fetchall()

    want = fresh()
    old = tmp_path / "v2.duckdb"
    with monkeypatch.context() as m:  # the import as store version 2 did it: MD5
        m.setattr(schema, "MIGRATIONS", schema.MIGRATIONS[:2])
        m.setattr("debugger.store.CURRENT_VERSION", 2)
        m.setattr(state_hash, "SQL_NAME", "md5")
        m.setattr(state_hash, "register", lambda con: None)
        m.setattr(state_hash, "registered", lambda con: contextlib.nullcontext())
        with Store.open(old) as store:
            import_source(store, str(src))
            before = store._con.execute(query).fetchall()
            texts = dict(
                store._con.execute(
                    "SELECT checkpoint_id, CAST(working_state AS VARCHAR) FROM checkpoints"
                ).fetchall()
            )
    assert all(len(str(r[4])) == 32 for r in before)
    assert before != want  # MD5 hashes and the content names made from them
    assert ("run-1", 1, "given-7") in [(r[0], r[1], r[2]) for r in before]

    with Store.open(old) as store:
        assert store.schema_version() == schema.CURRENT_VERSION
        after = store._con.execute(query).fetchall()
        heads = store._con.execute(
            "SELECT r.head_checkpoint_id, c.checkpoint_id FROM runs r LEFT JOIN checkpoints c "
            "ON c.run_id = r.run_id AND c.checkpoint_id = r.head_checkpoint_id"
        ).fetchall()
        report = import_source(store, str(src))
    assert after == want
    assert all(h == c and h is not None for h, c in heads)
    assert report.total.imported == 0 and report.total.already_present == len(rows)
    by_old_id = {r[2]: r for r in before}
    assert by_old_id["given-7"][2] == "given-7"
    for old_id, text in texts.items():  # every state's new hash is XXH3-128 of its text
        step = by_old_id[old_id][1]
        run = by_old_id[old_id][0]
        new = next(r for r in after if r[0] == run and r[1] == step)
        assert new[4] == xxhash.xxh3_128_hexdigest(text.encode()) == state_hash.of_text(text)


def test_duckdb_never_draws_its_progress_bar_on_a_store_connection(tmp_path: Path) -> None:
    """DuckDB prints a progress bar to standard output once a statement runs for 2 s (a
    migration, a large import): that would corrupt ``--json`` output."""
    with Store.open(tmp_path / "s.duckdb") as store:
        setting = store._con.execute("SELECT current_setting('enable_progress_bar')").fetchone()
    assert setting == (False,)
