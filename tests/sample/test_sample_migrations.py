"""The sample's state-schema migrations: v1 and v2 runs migrate to what the v3 agent writes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from sample_checkpoints.refund_desk import migrations
from sample_checkpoints.refund_desk.legacy import load_from, save_as
from sample_checkpoints.scenarios import rerun_as_current
from tests.fixtures.sample import SampleFiles


def _states(db: Path, run_id: str) -> list[tuple[int, int, object]]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT step_index, schema_version, working_state FROM checkpoints "
            "WHERE run_id = ? ORDER BY checkpoint_seq",
            [run_id],
        ).fetchall()
    finally:
        con.close()
    return [(s, v, orjson.loads(w)) for s, v, w in rows]


def test_module_follows_the_contract() -> None:
    assert migrations.CURRENT_VERSION == 3
    assert callable(migrations.v1_to_v2) and callable(migrations.v2_to_v3)
    assert not hasattr(migrations, "v0_to_v1")


@pytest.mark.parametrize("run_id", ["schema-v1", "schema-v2"])
def test_old_runs_migrate_to_what_the_current_agent_writes(
    run_id: str, sample_data: SampleFiles, tmp_path: Path
) -> None:
    old = _states(sample_data.native, run_id)
    current = _states(rerun_as_current(run_id, tmp_path), run_id)
    assert [s for s, _, _ in old] == [s for s, _, _ in current] == list(range(11))
    for (step, version, state), (_, now_version, expected) in zip(old, current, strict=True):
        assert now_version == 3
        assert isinstance(state, dict)
        assert load_from(state, version) == expected, f"{run_id} step {step}"
        assert save_as(expected, version) == state  # the old release wrote exactly this


def test_migrations_are_pure(sample_data: SampleFiles) -> None:
    _, _, state = _states(sample_data.native, "schema-v1")[-1]
    assert isinstance(state, dict)
    before = orjson.dumps(state)
    migrations.v2_to_v3(migrations.v1_to_v2(state))
    assert orjson.dumps(state) == before
