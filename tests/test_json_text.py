"""``debugger.json_text.preview``: the one short form of a value that every surface shows."""

from __future__ import annotations

from typing import Any

import pytest

from debugger.json_text import ELLIPSIS, PREVIEW_CHARS, loads, preview


def test_keys_keep_the_values_own_order_and_strings_stay_quoted() -> None:
    assert preview({"b": 1, "a": [1, "2"]}) == '{"b":1,"a":[1,"2"]}'
    assert preview("1") == '"1"' and preview(1) == "1"


def test_a_cut_preview_has_the_limit_and_ends_in_one_ellipsis() -> None:
    text = preview({"text": "x" * 1000}, 50)
    assert len(text) == 50
    assert text.endswith(ELLIPSIS) and not text.endswith(ELLIPSIS * 2)
    assert "..." not in text
    assert len(preview("y" * 1000)) == PREVIEW_CHARS


def test_a_value_that_fits_is_whole() -> None:
    value = {"k": "v" * 10}
    assert loads(preview(value, 18)) == value


@pytest.mark.parametrize("value", ["a\nb", {"x\ny": "1\r\n2"}, ["\n" * 5]])
def test_no_newline_ever(value: Any) -> None:
    assert "\n" not in preview(value) and "\r" not in preview(value)


def test_what_json_cannot_hold_is_shown_by_repr() -> None:
    assert preview(2**70) == str(2**70)
    assert preview({1: "int key"}) == '{"1":"int key"}'
    assert preview(object()).startswith('"<object object at')
    loop: dict[str, Any] = {}
    loop["self"] = loop
    assert preview(loop) == "{'self': {...}}"
    assert "\n" not in preview({"big": 2**70, "obj": _Lines()})


class _Lines:
    def __repr__(self) -> str:
        return "two\nlines"
