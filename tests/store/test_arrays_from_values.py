"""Arrays assembled from buffers equal what ``pa.array`` builds, or decline to be built."""

from __future__ import annotations

import pyarrow as pa
import pytest

from debugger.store import arrays


@pytest.mark.parametrize(
    "values",
    [[1, None, -3, 2**63 - 1], [None, None], [], [0]],
    ids=["mixed", "nulls", "empty", "one"],
)
def test_int64s_equal_pa_array(values: list[int | None]) -> None:
    built = arrays.int64s(values)
    assert built is not None and built.equals(pa.array(values, type=pa.int64()))


@pytest.mark.parametrize("values", [[2**63], [1, "2"], [True], [1.0]])
def test_int64s_decline_what_is_not_a_64_bit_int(values: list[object]) -> None:
    assert arrays.int64s(values) is None


def test_bools_and_text_equal_pa_array() -> None:
    flags = [True, None, False, False]
    built = arrays.bools(flags)
    assert built is not None and built.equals(pa.array(flags, type=pa.bool_()))
    assert arrays.bools([1]) is None
    texts = ["é", None, "", "x" * 1000]
    text = arrays.utf8(texts)
    assert text is not None and text.equals(pa.array(texts, type=pa.string()))
    raw = arrays.utf8([b'{"a":1}', None])
    assert raw is not None and raw.to_pylist() == ['{"a":1}', None]
    assert arrays.utf8([1]) is None


def test_int_lists_equal_pa_array() -> None:
    lists = [[1, 2], [], [2**40]]
    built = arrays.int_lists(lists, pa.int64())
    assert built.equals(pa.array(lists, type=pa.list_(pa.int64())))
    small = arrays.int_lists([[0, 5], [7]], pa.int32())
    assert small.equals(pa.array([[0, 5], [7]], type=pa.list_(pa.int32())))
