"""A JSON value nested deeper than the import's limit is quarantined with its reason; one at
the limit is shown everywhere; and a store written before the limit existed, holding a
deeper one, gives one clear error on every surface, never a traceback."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest

from debugger.diff import diff_refs
from debugger.errors import DecodeError
from debugger.store import Store, json_depth
from debugger.store.json_depth import MAX_DEPTH, depth, of_array
from tests.fixtures.native import stepscope
from tests.ui.helpers import open_app


def nested(levels: int, leaf: str = "1") -> str:
    return '{"a":' * levels + leaf + "}" * levels


def listed(levels: int) -> str:
    return "[" * levels + "]" * levels


def _source(path: Path, states: list[str], metadata: str = "{}") -> Path:
    with sqlite3.connect(path) as con:
        con.execute(
            "CREATE TABLE checkpoints (run_id TEXT, step_index INTEGER, working_state TEXT, "
            "metadata TEXT, tokens_spent INTEGER, steps_spent INTEGER, wall_clock_ms INTEGER)"
        )
        con.executemany(
            "INSERT INTO checkpoints VALUES ('r', ?, ?, ?, 0, 0, 0)",
            [(i, s, metadata) for i, s in enumerate(states)],
        )
    return path


def test_depth_counts_brackets_outside_strings_only() -> None:
    assert depth('{"a": [1, {"b": "[[[{{"}]}') == 3
    assert depth('{"s": "a\\"[[", "t": "x\\\\"}') == 1  # an escaped quote, an escaped backslash
    assert depth("[]") == 1 and depth("1") == 0
    # strings side by side, brackets and escapes in them: only the outer list counts
    assert depth('["[", "]]", "", "\\\\", "{\\"["]') == 1
    assert depth('{"a\\u005b": [[], "\\n[", {"b": "}"}]}') == 3
    texts = [nested(MAX_DEPTH), nested(MAX_DEPTH + 1), None, listed(100_000),
             '"' + "[" * 500 + '"']  # fmt: skip
    assert of_array(pa.array(texts)).to_pylist() == [False, True, False, True, False]


def test_a_short_run_of_brackets_is_measured_as_numpy_measures_a_long_one() -> None:
    """Fewer than ``SHORT_BRACKETS`` brackets are counted in a loop (numpy's fixed cost is
    most of measuring a message): the same depth as numpy's running sum gives."""
    import random

    import numpy as np

    rng = random.Random(16)
    for _ in range(2000):
        opened: list[str] = []
        out = []
        while len(out) + len(opened) < rng.randint(1, 2 * json_depth.SHORT_BRACKETS):
            if opened and rng.random() < 0.5:
                out.append(opened.pop())
            else:
                out.append(rng.choice("[{"))
                opened.append("]" if out[-1] == "[" else "}")
        brackets = "".join(out + opened[::-1]).encode()
        b = np.frombuffer(brackets, dtype=np.uint8).astype(np.int32)
        assert json_depth._depth(brackets) == int(np.cumsum((b & 2) - 1).max())


@pytest.mark.parametrize("column", ["working_state", "metadata"])
def test_import_quarantines_what_nests_deeper_than_the_limit(tmp_path: Path, column: str) -> None:
    deep = listed(100_000) if column == "working_state" else nested(MAX_DEPTH + 1)
    states = [nested(MAX_DEPTH), nested(MAX_DEPTH, "2"), deep]
    metadata = "{}"
    if column == "metadata":
        states, metadata = [nested(3)] * 3, deep
    path = _source(tmp_path / "deep.sqlite", states, metadata)
    result = stepscope("import", path, "--store", tmp_path / "s.duckdb", "--json")
    assert result.exit_code == 0
    report = __import__("json").loads(result.stdout)
    reason = f"{column} is nested deeper than {MAX_DEPTH} levels"
    quarantined = 3 if column == "metadata" else 1
    assert report["quarantine_reasons"] == {reason: quarantined}
    t = report["total"]
    assert t["read"] == t["imported"] + t["already_present"] + t["quarantined"]


@pytest.fixture(scope="module")
def deep_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run ``r``: steps 0 and 1 nested exactly to the limit, step 2 too deep (quarantined)."""
    tmp = tmp_path_factory.mktemp("deep")
    states = [nested(MAX_DEPTH), nested(MAX_DEPTH, "2"), listed(100_000)]
    path = _source(tmp / "deep.sqlite", states)
    assert stepscope("import", path, "--store", tmp / "s.duckdb").exit_code == 0
    return tmp / "s.duckdb"


@pytest.mark.parametrize(
    "args",
    [["show", "r"], ["show", "r", "--step", "1"], ["show", "r", "--step", "1", "--json"],
     ["diff", "r:0", "r:1"], ["diff", "r:0", "r:1", "--json"], ["audit", "r"],
     ["audit", "r", "--json"]],
)  # fmt: skip
def test_cli_shows_values_at_the_limit(deep_store: Path, args: list[str]) -> None:
    result = stepscope(*args, "--store", deep_store)
    assert result.exit_code == 0, result.stderr
    if args[0] == "diff":
        assert "values_changed" in result.stdout and "2" in result.stdout


def test_notebook_views_show_values_at_the_limit(deep_store: Path) -> None:
    with Store.open(deep_store, read_only=True) as s:
        html = s.checkpoint("r", step=1)._repr_html_()
        assert "Checkpoint r step 1" in html and "more characters" in html  # cut to a size
        assert "values_changed" in diff_refs(s, "r:0", "r:1")._repr_html_()


def test_app_pages_show_values_at_the_limit(deep_store: Path) -> None:
    at = open_app(deep_store, "timeline", run="r", step="1")
    assert not at.exception
    at.toggle(key="timeline_full_state").set_value(True).run()
    assert not at.exception and '"a":2' in at.json[0].proto.body
    for url, query in [("diff", {"a": "r:0", "b": "r:1"}), ("audit", {"run": "r"}), (None, {})]:
        at = open_app(deep_store, url, **query)
        assert not at.exception, url


@pytest.fixture(scope="module")
def older_store(deep_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store as an older version left it: a state 100,000 levels deep was stored."""
    path = tmp_path_factory.mktemp("older") / "s.duckdb"
    path.write_bytes(deep_store.read_bytes())
    with Store.open(path) as s:
        s.sql("UPDATE checkpoint_rows SET working_state = ? WHERE step_index = 1",
              ['{"a":' + listed(100_000) + "}"])  # fmt: skip
    return path


@pytest.mark.parametrize(
    "args",
    [["show", "r", "--step", "1"], ["diff", "r:0", "r:1"], ["audit", "r"],
     ["replay", "r", "--from", "1", "--agent", "json:loads"]],
)  # fmt: skip
def test_an_older_store_gives_one_line_on_the_cli(older_store: Path, args: list[str]) -> None:
    result = stepscope(*args, "--store", older_store)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: a stored JSON value is nested too deeply")
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr


def test_an_older_store_gives_one_error_on_the_pages_and_in_python(older_store: Path) -> None:
    for url, query in [("timeline", {"run": "r", "step": "1"}), ("diff", {"a": "r:0", "b": "r:1"}),
                       ("audit", {"run": "r"}), (None, {})]:  # fmt: skip
        at = open_app(older_store, url, **query)
        assert not at.exception, url
        if url:
            assert [e.value for e in at.error if "nested too deeply" in e.value], url
    with Store.open(older_store, read_only=True) as s, pytest.raises(DecodeError):
        s.checkpoint("r", step=1)


@pytest.mark.parametrize("levels", [600, 900])
def test_an_older_store_between_the_parsers_limits(
    deep_store: Path, tmp_path: Path, levels: int
) -> None:
    """Deep enough for Python's recursion, not for orjson's parser (1,024 levels)."""
    path = tmp_path / "s.duckdb"
    path.write_bytes(deep_store.read_bytes())
    with Store.open(path) as s:
        s.sql("UPDATE checkpoint_rows SET working_state = ? WHERE step_index = 1",
              [nested(levels, "3")])  # fmt: skip
    for args in (["show", "r", "--step", "1"], ["diff", "r:0", "r:1"], ["audit", "r"]):
        result = stepscope(*args, "--store", path)
        assert "Traceback" not in result.stderr and result.exit_code in (0, 2), args
        if result.exit_code:
            assert "nested too deeply" in result.stderr
    for url, query in [("timeline", {"run": "r", "step": "1"}), ("diff", {"a": "r:0", "b": "r:1"}),
                       ("audit", {"run": "r"})]:  # fmt: skip
        at = open_app(path, url, **query)
        assert not at.exception, url
        toggles = [t for t in at.toggle if t.key == "timeline_full_state"]
        if toggles:  # the step itself showed: open the full state too
            toggles[0].set_value(True).run()
            assert not at.exception
    with Store.open(path, read_only=True) as s:
        assert "Checkpoint r step 1" in s.checkpoint("r", step=1)._repr_html_()
