"""Mapping files: the worked example of docs/mapping.md, constants, paths, other readers."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import debugger
from tests.fixtures.native import stepscope_json

DOC = Path(__file__).resolve().parents[2] / "docs" / "mapping.md"


def block(lang: str) -> str:
    found = re.search(rf"^```{lang}\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.M | re.S)
    assert found, f"no {lang} block in docs/mapping.md"
    return found.group(1)


def test_the_worked_example_of_the_docs(tmp_path: Path) -> None:
    con = sqlite3.connect(tmp_path / "support.sqlite")
    con.executescript(block("sql"))
    con.close()
    (tmp_path / "support.toml").write_text(block("toml"))
    report = stepscope_json(
        "import", tmp_path / "support.sqlite", "--mapping", tmp_path / "support.toml"
    )
    assert report["flavour"] == "mapped"
    assert report["total"] == {
        "read": 3,
        "imported": 3,
        "already_present": 0,
        "quarantined": 0,
        "updated": 0,
    }
    doc = stepscope_json("show", "s-1", "--step", "2")["checkpoint"]
    assert doc["working_state"] == {"ticket": "T-9", "phase": "refund"}
    assert doc["budgets"] == {"tokens_spent": 720, "steps_spent": 2, "wall_clock_ms": 2100}
    assert doc["pending_effects"] == [
        {"tool": "refund", "idempotency_key": "rf-T-9", "args": {"cents": 4500}}
    ]
    assert doc["schema_version"] == 1
    assert doc["model_version"] == "bot-2026.10"
    assert doc["metadata"] == {"bot": "support", "limits": {"tokens": 5000}}
    first = stepscope_json("show", "s-1", "--step", "1")["checkpoint"]
    assert first["pending_effects"] == []
    assert doc["parent_id"] == first["checkpoint_id"]
    run = stepscope_json("runs")["runs"][0]
    assert (run["run_id"], run["status"], run["agent"]) == ("s-1", "crashed", None)
    with debugger.open("stepscope.duckdb") as store:
        [effect] = store.effects("s-1")
        assert (effect.status, effect.args, effect.idempotency_key) == (
            "pending", {"cents": 4500}, "rf-T-9")  # fmt: skip
    again = stepscope_json(
        "import", tmp_path / "support.sqlite", "--mapping", tmp_path / "support.toml"
    )
    assert again["total"]["already_present"] == 3


def test_constants_of_every_kind_and_quoted_paths(tmp_path: Path) -> None:
    con = sqlite3.connect(tmp_path / "s.sqlite")
    con.execute("CREATE TABLE snaps (id TEXT, n INTEGER, body TEXT)")
    con.execute("INSERT INTO snaps VALUES ('r', 0, ?)", [json.dumps({"the state": {"a": 1}})])
    con.commit()
    con.close()
    (tmp_path / "m.toml").write_text(
        """
[checkpoints]
table = "snaps"
run_id = "id"
step_index = "n"
working_state = { column = "body", path = '$."the state"' }
metadata = { value = { agent = "const-agent", limits = { steps = 10 } } }
tool_versions = { value = { search = "2.0" } }
pending_effects = { value = [] }
model_version = { value = "m-1" }
created_at = { value = 2026-11-01T10:00:00Z }
tokens_spent = { value = 7 }
"""
    )
    report = stepscope_json("import", tmp_path / "s.sqlite", "--mapping", tmp_path / "m.toml")
    assert report["total"]["quarantined"] == 0, report["quarantine_reasons"]
    doc = stepscope_json("show", "r", "--step", "0")["checkpoint"]
    assert doc["working_state"] == {"a": 1}
    assert doc["metadata"] == {"agent": "const-agent", "limits": {"steps": 10}}
    assert doc["tool_versions"] == {"search": "2.0"}
    assert doc["created_at"] == "2026-11-01T10:00:00"
    assert (doc["model_version"], doc["budgets"]["tokens_spent"]) == ("m-1", 7)


def test_a_mapping_over_parquet(tmp_path: Path) -> None:
    rows = [{"sid": "p", "turn": t, "doc": json.dumps({"mem": {"t": t}})} for t in range(3)]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "snaps.parquet")
    (tmp_path / "m.toml").write_text(
        '[checkpoints]\ntable = "checkpoints"\nrun_id = "sid"\nstep_index = "turn"\n'
        'working_state = { column = "doc", path = "$.mem" }\n'
    )
    report = stepscope_json("import", tmp_path / "snaps.parquet", "--mapping", tmp_path / "m.toml")
    assert report["total"]["imported"] == 3
    assert stepscope_json("show", "p", "--step", "2")["checkpoint"]["working_state"] == {"t": 2}


def test_a_path_that_is_absent_sends_only_that_row_to_quarantine(tmp_path: Path) -> None:
    con = sqlite3.connect(tmp_path / "s.sqlite")
    con.execute("CREATE TABLE snaps (id TEXT, n INTEGER, body TEXT)")
    con.executemany(
        "INSERT INTO snaps VALUES ('r', ?, ?)",
        [(0, '{"mem": {}}'), (1, '{"other": 1}'), (2, "not json")],
    )
    con.commit()
    con.close()
    (tmp_path / "m.toml").write_text(
        '[checkpoints]\ntable = "snaps"\nrun_id = "id"\nstep_index = "n"\n'
        'working_state = { column = "body", path = "$.mem" }\n'
    )
    report = stepscope_json("import", tmp_path / "s.sqlite", "--mapping", tmp_path / "m.toml")
    assert report["quarantine_reasons"] == {"missing working_state": 2}
    assert report["total"]["imported"] == 1
