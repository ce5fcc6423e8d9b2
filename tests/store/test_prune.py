"""Retention: `stepscope prune` and :mod:`debugger.store.prune` on real stores.

Each rule is checked against what the store held before (computed from the store's own
reads, not restated), the cascade through effects, tape, quarantine and replays is checked
row by row, a dry run changes nothing, the file shrinks on disk, and the rules can come from
a committed ``stepscope.toml``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from benchmarks import synth
from debugger.audit.retention import retention_findings
from debugger.settings import CONFIG
from debugger.store import Store
from debugger.store.prune import PruneRules, compact, parse_cutoff
from debugger.store.schema import ROW_GROUP_SIZE
from loaders import ImportOptions, import_source
from tests.fixtures.native import (
    effect_rows,
    native_rows,
    stepscope,
    tool_call_rows,
    write_native_sqlite,
)
from tests.fixtures.replay import RecordedRuns


def _copy(store: Path, tmp_path: Path, name: str = "s.duckdb") -> Path:
    target = tmp_path / name
    shutil.copy(store, target)
    return target


def _snapshot(path: Path) -> dict[str, dict[str, list[tuple[object, ...]]]]:
    """Per run: its checkpoints (id, step), effects (id, step) and tool calls (id, step)."""
    out: dict[str, dict[str, list[tuple[object, ...]]]] = {}
    with Store.open(path, read_only=True) as s:
        for run in s.run_records():
            out[run.run_id] = {
                "checkpoints": [(c.checkpoint_id, c.step_index) for c in s.checkpoints(run.run_id)],
                "effects": [(e.effect_id, e.step_index) for e in s.effects(run.run_id)],
                "calls": [(t.seq, t.step_index) for t in s.tool_calls(run.run_id)],
                "head": [((s.audit_fingerprint(run.run_id) or ())[2],)],
            }
    return out


def test_keep_last_keeps_the_newest_n_and_the_tape_from_there(
    sample_native_store: Path, tmp_path: Path
) -> None:
    store = _copy(sample_native_store, tmp_path)
    before = _snapshot(store)
    result = stepscope("prune", "--keep-last", "3", "--store", store, "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    after = _snapshot(store)
    assert set(after) == set(before) and report["deleted_runs"] == {}
    gone = 0
    for run_id, was in before.items():
        now = after[run_id]
        assert now["checkpoints"] == was["checkpoints"][-3:], run_id  # the newest three
        assert now["head"] == was["head"]
        first = min(step for _, step in now["checkpoints"])
        assert now["effects"] == [e for e in was["effects"] if e[1] >= first]
        assert now["calls"] == [c for c in was["calls"] if c[1] >= first]
        gone += len(was["checkpoints"]) - len(now["checkpoints"])
    assert report["checkpoints"] == gone > 0
    with Store.open(store, read_only=True) as s:  # runs derived again from what is left
        assert all(r.checkpoint_count <= 3 for r in s.run_records())


def test_older_than_and_completed_older_than_pick_runs_by_their_newest_checkpoint(
    sample_native_store: Path, tmp_path: Path
) -> None:
    store = _copy(sample_native_store, tmp_path)
    with Store.open(store, read_only=True) as s:
        runs = {r.run_id: r for r in s.run_records()}
    times = sorted(r.last_at for r in runs.values() if r.last_at is not None)
    cut_all, cut_done = times[2], times[len(times) // 2]  # a few of every status; more done
    expected = {
        r.run_id for r in runs.values()
        if r.last_at is not None and (
            r.last_at < cut_all or (r.status == "completed" and r.last_at < cut_done))
    }  # fmt: skip
    assert 0 < len(expected) < len(runs)
    result = stepscope(
        "prune", "--older-than", cut_all.isoformat(), "--completed-older-than",
        cut_done.isoformat(), "--store", store, "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert set(json.loads(result.stdout)["deleted_runs"]) == expected
    with Store.open(store, read_only=True) as s:
        assert {r.run_id for r in s.run_records()} == set(runs) - expected
        for run_id in expected:
            assert s.sql("SELECT count(*) FROM checkpoints WHERE run_id = ?", [run_id]) == [(0,)]
            assert s.sql("SELECT count(*) FROM effects WHERE run_id = ?", [run_id]) == [(0,)]
            assert s.sql("SELECT count(*) FROM tool_calls WHERE run_id = ?", [run_id]) == [(0,)]


def test_run_deletes_one_run_with_its_quarantined_rows_and_reimport_restores_it(
    tmp_path: Path,
) -> None:
    rows = native_rows(runs=3, steps=4)
    rows.append(dict(rows[0], step_index="seven"))  # run-0's bad row: quarantined
    rows.append(dict(rows[5], step_index="eight"))  # run-1's
    calls = tool_call_rows(3, 4)
    source = write_native_sqlite(tmp_path / "src.sqlite", rows, effect_rows(3), calls)
    store = tmp_path / "s.duckdb"
    with Store.open(store) as s:
        import_source(s, str(source), ImportOptions())
        assert len(s.quarantine()) == 2
    result = stepscope("prune", "--run", "run-0", "--run", "nope", "--store", store, "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["deleted_runs"] == {"run-0": "named with --run"}
    assert report["missing_runs"] == ["nope"] and report["quarantined"] == 1
    with Store.open(store, read_only=True) as s:
        assert sorted(r.run_id for r in s.run_records()) == ["run-1", "run-2"]
        left = s.quarantine()
        assert len(left) == 1 and '"run-1"' in left["raw"].iloc[0]
        assert not s.effects("run-0") and not s.tool_calls("run-0")
    with Store.open(store) as s:  # the source still has it: a re-import brings it back whole
        report_again = import_source(s, str(source), ImportOptions())
        assert report_again.total.imported > 0
        assert len(s.checkpoints("run-0")) == 4 and s.effects("run-0")


def test_a_run_s_replays_go_with_it(recorded_runs: RecordedRuns, tmp_path: Path) -> None:
    from debugger.replay import replay

    store = _copy(recorded_runs.store_path, tmp_path)
    first = replay(store, "ledger-done", 0, "tests.replay.agents:ledger_agent")
    second = replay(store, "ledger-done", 2, "tests.replay.agents:ledger_agent")
    with Store.open(store, read_only=True) as s:
        runs = s.run_records()
    # The session's recorded store may hold replays of ledger-done made by other tests.
    replays = {r.run_id for r in runs if r.replay_of == "ledger-done"}
    assert {first.replay_run_id, second.replay_run_id} <= replays
    going = {"ledger-done", *replays}
    others = {r.run_id for r in runs} - going
    dry = stepscope("prune", "--run", "ledger-done", "--dry-run", "--store", store, "--json")
    assert set(json.loads(dry.stdout)["deleted_runs"]) == going
    result = stepscope("prune", "--run", "ledger-done", "--store", store)
    assert result.exit_code == 0, result.stderr
    assert f"{first.replay_run_id}: a replay of ledger-done" in result.stdout
    with Store.open(store, read_only=True) as s:
        assert {r.run_id for r in s.run_records()} == others


def test_keep_last_drops_a_replay_whose_start_is_no_longer_kept(
    recorded_runs: RecordedRuns, tmp_path: Path
) -> None:
    from debugger.replay import replay

    store = _copy(recorded_runs.store_path, tmp_path)
    early = replay(store, "ledger-done", 0, "tests.replay.agents:ledger_agent")
    with Store.open(store, read_only=True) as s:
        steps = [c.step_index for c in s.checkpoints("ledger-done")]
    with Store.open(store) as s:
        report = s.prune(PruneRules(keep_last=2))
    assert min(steps[-2:]) > 0
    assert report.deleted_runs[early.replay_run_id].startswith("replays ledger-done")


def test_a_dry_run_changes_nothing(sample_native_store: Path, tmp_path: Path) -> None:
    store = _copy(sample_native_store, tmp_path)
    data = store.read_bytes()
    result = stepscope("prune", "--keep-last", "1", "--older-than", "1d", "--dry-run",
                       "--store", store)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("would delete 13 run(s) entirely")
    assert store.read_bytes() == data


def test_the_store_shrinks_on_disk(tmp_path: Path) -> None:
    source, store = tmp_path / "big.sqlite", tmp_path / "big.duckdb"
    synth.write(synth.Spec(runs=20, steps=400, state_bytes=2048), source, None)
    with Store.open(store) as s:
        import_source(s, str(source), ImportOptions())
    size = store.stat().st_size
    result = stepscope("prune", "--keep-last", "10", "--store", store, "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["bytes_before"] == size
    assert report["bytes_after"] == store.stat().st_size < size * 0.3
    with Store.open(store, read_only=True) as s:  # the rewritten store is whole and usable
        assert sum(r.checkpoint_count for r in s.run_records()) == 200
        assert s.checkpoint("run-0000003", step=399).step_index == 399
    with Store.open(store) as s:  # and writable: a re-import refills it
        assert import_source(s, str(source), ImportOptions()).total.imported == 20 * 390


def test_compact_alone_keeps_every_row(sample_native_store: Path, tmp_path: Path) -> None:
    store = _copy(sample_native_store, tmp_path)
    before = _snapshot(store)
    compact(str(store))
    assert _snapshot(store) == before
    assert not list(tmp_path.glob(".*compact*"))


def test_compact_keeps_the_stores_row_groups_and_writes_each_once(tmp_path: Path) -> None:
    """The copy is attached with the store's row group size (DuckDB keeps no record of it:
    a plain copy merged every 8,192-row group into one of 122,880), and each table is
    written once: two imports leave a short row group in the middle, which the copy merged
    with the rows after it and wrote again, leaving the first write as free blocks."""
    store = tmp_path / "s.duckdb"
    for i, runs in enumerate((5, 5)):
        source = tmp_path / f"{i}.sqlite"
        synth.write(synth.Spec(runs=runs, steps=2_000, state_bytes=2048, seed=i), source, None)
        with Store.open(store) as s:
            import_source(s, str(source), ImportOptions())
    before = _snapshot(store)
    size, after = compact(str(store))
    assert after <= size
    assert _snapshot(store) == before
    con = duckdb.connect(str(store), read_only=True)
    try:
        groups = con.execute(
            "SELECT max(count) FROM (SELECT row_group_id, max(start + count) - min(start) AS count "
            "FROM pragma_storage_info('checkpoint_rows') GROUP BY ALL)"
        ).fetchone()
        free = con.execute("SELECT free_blocks FROM pragma_database_size()").fetchone()
    finally:
        con.close()
    assert groups is not None and groups[0] <= ROW_GROUP_SIZE
    assert free == (0,)


def test_compact_spills_beside_the_store_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its memory cap the copy spills to disk: beside the store (DuckDB's default is
    ``.tmp`` in the working directory), and nothing of it stays."""
    store, cwd = tmp_path / "s.duckdb", tmp_path / "cwd"
    cwd.mkdir()
    source = tmp_path / "0.sqlite"
    synth.write(synth.Spec(runs=4, steps=2_000, state_bytes=2048), source, None)
    with Store.open(store) as s:
        import_source(s, str(source), ImportOptions())
    before = _snapshot(store)
    # where DuckDB would spill by default, a file: a spill there fails
    (cwd / ".tmp").write_text("not a directory")
    monkeypatch.chdir(cwd)
    monkeypatch.setattr("debugger.store.prune.COMPACT_MEMORY_LIMIT", "24MB")  # spills
    compact(str(store))
    assert _snapshot(store) == before
    assert [p.name for p in cwd.iterdir()] == [".tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.sqlite", "cwd", "s.duckdb"]


_COMPACT_LIMITED = """
import resource, signal, sys
from debugger.store.prune import compact
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (4 << 20, 4 << 20))
try:
    compact(sys.argv[1])
except Exception as e:
    print(type(e).__name__, str(e).splitlines()[0])
    sys.exit(3)
"""


def test_a_compaction_the_disk_stops_leaves_the_store_and_nothing_else(tmp_path: Path) -> None:
    """Files may not grow past 4 MB (the kernel's limit, as a full disk would stop it): the
    copy fails, the store is as it was, and neither the copy nor its WAL stays beside it."""
    store = tmp_path / "s.duckdb"
    source = tmp_path / "0.sqlite"
    synth.write(synth.Spec(runs=4, steps=2_000, state_bytes=2048), source, None)
    with Store.open(store) as s:
        import_source(s, str(source), ImportOptions())
    assert store.stat().st_size > 4 << 20
    before = _snapshot(store)
    done = subprocess.run(
        [sys.executable, "-c", _COMPACT_LIMITED, str(store)],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert _snapshot(store) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["0.sqlite", "s.duckdb"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [("90d", timedelta(days=90)), ("12h", timedelta(hours=12)), ("2w", timedelta(weeks=2)),
     ("30min", timedelta(minutes=30)), ("45s", timedelta(seconds=45))],
)  # fmt: skip
def test_ages_count_back_from_now(text: str, expected: timedelta) -> None:
    now = datetime(2026, 6, 1, 12, 0)
    assert parse_cutoff(text, now) == now - expected


def test_dates_are_read_as_utc() -> None:
    assert parse_cutoff("2026-01-31") == datetime(2026, 1, 31)
    assert parse_cutoff("2026-01-31T12:00:00+02:00") == datetime(2026, 1, 31, 10, 0)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([], "no retention rule given"),
        (["--older-than", "soon"], "neither an age nor a date"),
        (["--keep-last", "0"], "--keep-last"),
    ],
)
def test_bad_rules_are_one_line(
    sample_native_store: Path, tmp_path: Path, args: list[str], needle: str
) -> None:
    store = _copy(sample_native_store, tmp_path)
    result = stepscope("prune", *args, "--store", store)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert needle in result.stderr


def test_pruning_a_missing_store_creates_none(tmp_path: Path) -> None:
    result = stepscope("prune", "--keep-last", "1", "--store", tmp_path / "none.duckdb")
    assert result.exit_code == 2 and "no store at" in result.stderr
    assert not (tmp_path / "none.duckdb").exists()


def test_rules_from_stepscope_toml_found_from_a_subdirectory(
    sample_native_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _copy(sample_native_store, tmp_path)
    (tmp_path / "stepscope.toml").write_text("[prune]\nkeep_last = 2\n")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "deep" / "er")
    dry = json.loads(stepscope("prune", "--dry-run", "--store", store, "--json").stdout)
    assert dry["rules_from"] == str(tmp_path / "stepscope.toml") and dry["checkpoints"] > 0
    wider = json.loads(
        stepscope("prune", "--dry-run", "--keep-last", "5", "--store", store, "--json").stdout
    )  # an option overrides the file's value
    assert wider["rules_from"] == "options" and wider["checkpoints"] < dry["checkpoints"]
    ignored = stepscope("prune", "--dry-run", "--no-config", "--store", store)
    assert ignored.exit_code == 2 and "no retention rule" in ignored.stderr


def test_a_bad_settings_file_is_one_line(
    sample_native_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _copy(sample_native_store, tmp_path)
    conf = tmp_path / "team.toml"
    monkeypatch.setenv(CONFIG.name, str(conf))
    for text, needle in (("[prune]\nkeep = 3\n", "unknown key 'keep'"),
                         ("[prune\n", "cannot read the settings file"),
                         ("[prune]\nkeep_last = 'x'\n", "keep_last must be")):  # fmt: skip
        conf.write_text(text)
        result = stepscope("prune", "--store", store)
        assert result.exit_code == 2 and needle in result.stderr, result.output
    conf.unlink()
    assert "no settings file" in stepscope("prune", "--store", store).stderr


def test_the_audit_warns_about_a_source_without_retention(
    sample_native_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with Store.open(sample_native_store, read_only=True) as s:
        newest = max(r.last_at for r in s.run_records() if r.last_at is not None)
        oldest = min(r.first_at for r in s.run_records() if r.first_at is not None)
        assert retention_findings(s, now=oldest + timedelta(days=30)) == []  # young: fine
        [warning] = retention_findings(s, now=newest + timedelta(days=120))
        assert warning.rule_id == "no-retention" and warning.severity == "warning"
        assert "native.sqlite: 121 checkpoints kept" in warning.message
        assert "0 written in the last 30 days" in warning.message
        (tmp_path / "stepscope.toml").write_text("[prune]\nolder_than = '180d'\n")
        assert retention_findings(s, now=newest + timedelta(days=120)) == []
    (tmp_path / "stepscope.toml").unlink()
    result = stepscope("audit", "--all", "--store", sample_native_store, "--json")
    doc = json.loads(result.stdout)
    assert [f["rule_id"] for f in doc["store_findings"]] in (["no-retention"], [])
