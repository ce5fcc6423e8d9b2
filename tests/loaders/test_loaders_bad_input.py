"""Bad sources and bad mapping files: one line on stderr, exit status 2, no traceback."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fixtures.native import (
    MAPPING_TOML,
    WRITERS,
    effect_rows,
    native_rows,
    stepscope,
    stepscope_json,
    tool_call_rows,
    write_native_parquet,
    write_native_sqlite,
)


def _missing(d: Path) -> list[str]:
    return [str(d / "nope.sqlite")]


def _text(d: Path) -> list[str]:
    (d / "notes.txt").write_text("just some notes\n")
    return [str(d / "notes.txt")]


def _empty(d: Path) -> list[str]:
    (d / "empty.sqlite").write_bytes(b"")
    return [str(d / "empty.sqlite")]


def _truncated_sqlite(d: Path) -> list[str]:
    src = write_native_sqlite(d / "full.sqlite", native_rows(3, 40))
    (d / "cut.sqlite").write_bytes(src.read_bytes()[:3000])
    return [str(d / "cut.sqlite")]


def _corrupt_parquet(d: Path) -> list[str]:
    src = write_native_parquet(d / "full.parquet", native_rows())
    (d / "cut.parquet").write_bytes(src.read_bytes()[:400])
    return [str(d / "cut.parquet")]


def _parquet_garbage_inside(d: Path) -> list[str]:
    # valid magic at both ends, garbage footer length in between
    (d / "bad.parquet").write_bytes(b"PAR1" + b"\x00" * 64 + b"\xff\xff\xff\x7fPAR1")
    return [str(d / "bad.parquet")]


def _wrong_flavour(d: Path) -> list[str]:
    con = sqlite3.connect(d / "other.sqlite")
    con.execute("CREATE TABLE orders (id INTEGER, total REAL)")
    con.commit()
    con.close()
    return [str(d / "other.sqlite")]


def _native_on_non_native(d: Path) -> list[str]:
    return [*_wrong_flavour(d), "--flavor", "native"]


def _empty_dir(d: Path) -> list[str]:
    (d / "exports").mkdir()
    return [str(d / "exports")]


def _glob_nothing(d: Path) -> list[str]:
    return [str(d / "none-*.parquet")]


def _mapped_without_file(d: Path) -> list[str]:
    return [str(write_native_sqlite(d / "n.sqlite", native_rows())), "--flavor", "mapped"]


def _mapped_source(d: Path, toml: str | bytes) -> list[str]:
    w = WRITERS["sqlite-mapped"](d / "src", native_rows(), effect_rows(), tool_call_rows())
    mapping = d / "bad.toml"
    if isinstance(toml, bytes):
        mapping.write_bytes(toml)
    else:
        mapping.write_text(toml)
    assert not isinstance(w, str)
    return [w.source, "--mapping", str(mapping)]


BAD_MAPPINGS: dict[str, str | bytes] = {
    "bad-toml": "[checkpoints\ntable = 'x'",
    "not-utf8": b"\xff\xfe[checkpoints]",
    "unknown-table": MAPPING_TOML.replace('"agent_snapshots"', '"snapshots"'),
    "unknown-column": MAPPING_TOML.replace('"turn"', '"turn_no"', 1),
    "bad-path": MAPPING_TOML.replace('path = "$.memory"', 'path = "memory"'),
    "unknown-section": MAPPING_TOML + "\n[runs]\ntable = 'x'\n",
    "unknown-field": MAPPING_TOML.replace("[effects]", "[effects]\ncolour = 'red'"),
    "missing-required": MAPPING_TOML.replace('step_index = "turn"\ncreated_at', "created_at"),
    "no-table": MAPPING_TOML.replace('table = "agent_snapshots"\n', ""),
    "bad-version": MAPPING_TOML.replace("version = 1", "version = 9"),
    "no-checkpoints": "version = 1\n",
    "bad-spec": MAPPING_TOML.replace('run_id = "session_id"', "run_id = 12", 1),
    "spec-unknown-key": MAPPING_TOML.replace("{ value = 3 }", "{ const = 3 }"),
    "malformed-path": MAPPING_TOML.replace('path = "$.memory"', 'path = "$.[memory"'),
    "section-not-a-table": "checkpoints = 3\n",
}
BAD_SOURCES: dict[str, Callable[[Path], list[str]]] = {
    "missing-file": _missing,
    "text-file": _text,
    "empty-file": _empty,
    "truncated-sqlite": _truncated_sqlite,
    "corrupt-parquet": _corrupt_parquet,
    "parquet-garbage-footer": _parquet_garbage_inside,
    "wrong-flavour": _wrong_flavour,
    "native-on-non-native": _native_on_non_native,
    "dir-without-parquet": _empty_dir,
    "glob-matching-nothing": _glob_nothing,
    "mapped-without-mapping": _mapped_without_file,
    "missing-mapping-file": lambda d: [*_mapped_source(d, "")[:2], str(d / "none.toml")],
    "mapping-is-a-directory": lambda d: [*_mapped_source(d, "")[:2], str(d)],
    **{
        f"mapping-{name}": functools.partial(lambda toml, d: _mapped_source(d, toml), toml)
        for name, toml in BAD_MAPPINGS.items()
    },
}


def assert_one_line_error(result: object, *words: str) -> None:
    stderr: str = result.stderr  # type: ignore[attr-defined]
    assert result.exit_code == 2, (result.stdout, stderr, result.exception)  # type: ignore[attr-defined]
    assert isinstance(result.exception, SystemExit)  # type: ignore[attr-defined]
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and "Hint: " in lines[0]
    assert "Traceback" not in stderr
    for word in words:
        assert word in lines[0]


@pytest.mark.parametrize("case", list(BAD_SOURCES))
def test_bad_source_gets_one_line_and_exit_2(case: str, tmp_path: Path) -> None:
    args = BAD_SOURCES[case](tmp_path)
    result = stepscope("import", *args, "--store", str(tmp_path / "s.duckdb"))
    assert_one_line_error(result)
    assert result.stdout == ""


def test_messages_say_what_is_wrong(tmp_path: Path) -> None:
    store = str(tmp_path / "s.duckdb")
    assert_one_line_error(
        stepscope("import", *_truncated_sqlite(tmp_path), "--store", store), "corrupt"
    )
    assert_one_line_error(
        stepscope("import", *_wrong_flavour(tmp_path), "--store", store), "orders", "--mapping"
    )
    assert_one_line_error(
        stepscope("import", *_mapped_source(tmp_path, BAD_MAPPINGS["unknown-column"]),
                  "--store", store),
        "turn_no",
    )  # fmt: skip


def test_a_failed_import_leaves_the_store_usable(tmp_path: Path) -> None:
    store = str(tmp_path / "s.duckdb")
    good = write_native_sqlite(tmp_path / "good.sqlite", native_rows())
    assert stepscope("import", good, "--store", store).exit_code == 0
    assert_one_line_error(stepscope("import", *_corrupt_parquet(tmp_path), "--store", store))
    assert stepscope("runs", "--store", store).exit_code == 0


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["show", "no-such-run"], ["no-such-run"]),
        (["show", "run-0", "--step", "99"], ["step 99"]),
        (["show", "run-0", "--checkpoint", "nope"], ["nope"]),
    ],
)
def test_not_found_is_one_line(args: list[str], words: list[str], tmp_path: Path) -> None:
    store = str(tmp_path / "s.duckdb")
    stepscope("import", write_native_sqlite(tmp_path / "n.sqlite", native_rows()), "--store", store)
    assert_one_line_error(stepscope(*args, "--store", store), *words)


@pytest.mark.parametrize(
    "case",
    ["missing-file", "text-file", "corrupt-parquet", "wrong-flavour", "mapping-bad-toml",
     "mapping-unknown-table", "mapping-unknown-column"],
)  # fmt: skip
def test_bad_source_creates_no_store(case: str, tmp_path: Path) -> None:
    args = BAD_SOURCES[case](tmp_path)
    assert_one_line_error(stepscope("import", *args, "--store", str(tmp_path / "new.duckdb")))
    assert not (tmp_path / "new.duckdb").exists()


def test_a_source_corrupt_part_way_keeps_runs_in_step_with_what_was_stored(
    tmp_path: Path,
) -> None:
    # the second file's footer is intact (so counting works) but its data pages are not
    rows = native_rows(2, 3)
    (tmp_path / "export").mkdir()
    write_native_parquet(tmp_path / "export" / "a.parquet", rows[:3])
    bad = write_native_parquet(tmp_path / "export" / "b.parquet", rows[3:])
    data = bytearray(bad.read_bytes())
    data[4:200] = b"\xab" * 196
    bad.write_bytes(bytes(data))
    result = stepscope("import", str(tmp_path / "export" / "*.parquet"))
    assert_one_line_error(result, "after 3 rows")
    runs = stepscope_json("runs")["runs"]
    assert [(r["run_id"], r["checkpoint_count"]) for r in runs] == [("run-0", 3)]
    step2 = stepscope_json("show", "run-0", "--step", "2")["checkpoint"]
    step1 = stepscope_json("show", "run-0", "--step", "1")["checkpoint"]
    assert step2["parent_id"] == step1["checkpoint_id"]
