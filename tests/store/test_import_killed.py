"""An import killed (SIGKILL) part-way leaves ``runs`` in step with the checkpoints it
committed, and an import that fails on a corrupt source leaves no new, empty store."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path

from debugger.store import Store
from tests.fixtures.native import native_rows, stepscope, write_native_sqlite

# The real CLI import in a child process. Its session commits after every batch (a tiny
# COMMIT_BYTES: the production threshold needs a source of hundreds of MB) and says so on
# stdout, so the test knows when committed batches exist and the import is still running.
CHILD = textwrap.dedent(
    """
    import sys, time
    import debugger.store.session as session

    session.COMMIT_BYTES = 1
    commit = session.ImportSession.commit

    def commit_and_say(self):
        commit(self)
        print("committed", flush=True)
        time.sleep(0.05)

    session.ImportSession.commit = commit_and_say
    from debugger.cli import main
    sys.argv = ["stepscope", *sys.argv[1:]]
    main()
    """
)


def _runs_agree_with_checkpoints(store_path: Path) -> list[tuple[object, ...]]:
    with Store.open(store_path, read_only=True) as store:
        return store.sql(
            """
            SELECT c.run_id, c.n, c.last_step, r.checkpoint_count, r.last_step
            FROM (SELECT run_id, count(*) AS n, max(step_index) AS last_step
                  FROM checkpoints GROUP BY run_id) c
            FULL JOIN runs r USING (run_id)
            WHERE r.run_id IS NULL OR c.run_id IS NULL
               OR c.n <> r.checkpoint_count OR c.last_step <> r.last_step"""
        )


def test_kill_9_mid_import_leaves_runs_in_step_with_committed_checkpoints(
    tmp_path: Path,
) -> None:
    rows = native_rows(4, 1500)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    for r in rows:  # native_rows' times are minute:second, valid up to step 59
        r["created_at"] = (start + timedelta(seconds=int(r["step_index"]))).isoformat()
    source = tmp_path / "grow.sqlite"
    store = tmp_path / "s.duckdb"
    # a populated store: the first third of every run, imported and derived
    write_native_sqlite(source, [r for r in rows if r["step_index"] < 500])
    assert stepscope("import", source, "--store", store).exit_code == 0
    write_native_sqlite(source, rows)  # the source grew
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, "import", str(source), "--store", str(store),
         "--batch-rows", "128", "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True,
    )  # fmt: skip
    assert child.stdout is not None
    commits = 0
    for line in child.stdout:
        commits += line.startswith("committed")
        if commits == 5:
            break
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    assert commits == 5, child.stderr.read() if child.stderr else ""
    assert child.returncode == -signal.SIGKILL
    with Store.open(store, read_only=True) as s:
        stored = s.sql("SELECT count(*) FROM checkpoints")[0][0]
    assert 4 * 500 < stored < len(rows)  # killed part-way, after some batches committed
    assert _runs_agree_with_checkpoints(store) == []
    # and the next import completes what was left
    assert stepscope("import", source, "--store", store).exit_code == 0
    with Store.open(store, read_only=True) as s:
        assert s.sql("SELECT count(*) FROM checkpoints")[0][0] == len(rows)
    assert _runs_agree_with_checkpoints(store) == []


def _corrupt_inside(path: Path) -> Path:
    """A SQLite file whose header and schema read, but whose table pages are garbage."""
    src = write_native_sqlite(path.with_suffix(".full"), native_rows(3, 200))
    data = bytearray(src.read_bytes())
    for at in range(4096 * 3, len(data), 4096):
        data[at : at + 100] = b"\xab" * 100
    path.write_bytes(bytes(data))
    return path


def test_a_corrupt_source_leaves_no_new_store(tmp_path: Path) -> None:
    store = tmp_path / "new.duckdb"
    result = stepscope("import", _corrupt_inside(tmp_path / "bad.sqlite"), "--store", store)
    assert result.exit_code == 2 and "corrupt" in result.stderr
    assert not store.exists() and not Path(f"{store}.wal").exists()


def test_a_corrupt_source_never_deletes_a_store_that_existed(tmp_path: Path) -> None:
    store = tmp_path / "s.duckdb"
    Store.open(store).close()  # an empty store, made before: it stays
    result = stepscope("import", _corrupt_inside(tmp_path / "bad.sqlite"), "--store", store)
    assert result.exit_code == 2
    assert store.exists()
    good = write_native_sqlite(tmp_path / "good.sqlite", native_rows())
    assert stepscope("import", good, "--store", store).exit_code == 0
    result = stepscope("import", _corrupt_inside(tmp_path / "bad2.sqlite"), "--store", store)
    assert result.exit_code == 2
    with Store.open(store, read_only=True) as s:
        assert len(s.runs()) == 3
