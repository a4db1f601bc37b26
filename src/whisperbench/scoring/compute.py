"""The Arrow compute functions the scoring modules call, by name (``pyarrow._compute.call_function``), not
through ``pyarrow.compute``, whose import makes a Python function with its documentation for every one of its
kernels: 30 ms of a command's start, in which a ``score`` of 10,000 pairs takes a second. Each function here is
``pyarrow.compute``'s of the same name with its default options (tests/test_arrays.py checks each against it).

>>> from whisperbench.scoring.arrays import array
>>> import pyarrow as pa
>>> values = array([1, 2, None, 4], pa.int64())
>>> sum(filter(values, is_valid(values))).as_py(), equal(values, values).null_count
(7, 1)
"""

from __future__ import annotations

from typing import Any

from pyarrow._compute import CastOptions, SetLookupOptions, SortOptions, call_function


def equal(left: Any, right: Any) -> Any:
    """``pyarrow.compute.equal``: element by element, null where either side is."""
    return call_function("equal", [left, right])


def and_(left: Any, right: Any) -> Any:
    """``pyarrow.compute.and_``: Boolean and, null where either side is."""
    return call_function("and", [left, right])


def is_valid(values: Any) -> Any:
    """``pyarrow.compute.is_valid``: true where a value is not null."""
    return call_function("is_valid", [values])


def filter(values: Any, mask: Any) -> Any:  # noqa: A001 (pyarrow.compute's name)
    """``pyarrow.compute.filter``: the values where ``mask`` is true (a null in the mask drops the value)."""
    return call_function("filter", [values, mask])


def sum(values: Any) -> Any:  # noqa: A001 (pyarrow.compute's name)
    """``pyarrow.compute.sum``: the sum of the values that are not null, a null scalar where there is none."""
    return call_function("sum", [values])


def fill_null(values: Any, fill: Any) -> Any:
    """``pyarrow.compute.fill_null`` with a scalar of the values' type: ``fill`` where a value is null."""
    return call_function("coalesce", [values, fill])


def take(data: Any, indices: Any) -> Any:
    """``pyarrow.compute.take`` (an array's or a table's rows at ``indices``, in their order)."""
    return call_function("take", [data, indices])


def dictionary_encode(values: Any) -> Any:
    """``pyarrow.compute.dictionary_encode``: each distinct value once, and an index per value."""
    return call_function("dictionary_encode", [values])


def not_equal(left: Any, right: Any) -> Any:
    """``pyarrow.compute.not_equal``: element by element, null where either side is."""
    return call_function("not_equal", [left, right])


def or_(left: Any, right: Any) -> Any:
    """``pyarrow.compute.or_``: Boolean or, null where either side is."""
    return call_function("or", [left, right])


def invert(values: Any) -> Any:
    """``pyarrow.compute.invert``: Boolean not."""
    return call_function("invert", [values])


def is_null(values: Any) -> Any:
    """``pyarrow.compute.is_null``: true where a value is null (a NaN is not)."""
    return call_function("is_null", [values])


def if_else(condition: Any, left: Any, right: Any) -> Any:
    """``pyarrow.compute.if_else``: ``left`` where ``condition`` is true, else ``right`` (null where it is null)."""
    return call_function("if_else", [condition, left, right])


def is_in(values: Any, value_set: Any) -> Any:
    """``pyarrow.compute.is_in``: whether each value is in ``value_set`` (a null matches a null)."""
    return call_function("is_in", [values], SetLookupOptions(value_set=value_set))


def sort_indices(data: Any, sort_keys: Any = ()) -> Any:
    """``pyarrow.compute.sort_indices``: the indices that sort an array, or a table by ``sort_keys`` ((column,
    "ascending" or "descending"), …), nulls at the end, ties in their order."""
    return call_function("sort_indices", [data], SortOptions(sort_keys=sort_keys))


def index_in(values: Any, value_set: Any) -> Any:
    """``pyarrow.compute.index_in``: each value's index in ``value_set`` (null where it is not there)."""
    return call_function("index_in", [values], SetLookupOptions(value_set=value_set))


def cast(values: Any, target_type: Any) -> Any:
    """``pyarrow.compute.cast`` (``Array.cast``): ``values`` as ``target_type``, refusing a lossy conversion."""
    return call_function("cast", [values], CastOptions.safe(target_type))


def any(values: Any) -> Any:  # noqa: A001 (pyarrow.compute's name)
    """``pyarrow.compute.any``: whether any value that is not null is true (a null scalar where there is none)."""
    return call_function("any", [values])


def unique(values: Any) -> Any:
    """``pyarrow.compute.unique``: each distinct value once, in the order of first appearance."""
    return call_function("unique", [values])


def add(left: Any, right: Any) -> Any:
    """``pyarrow.compute.add``: element by element (wrapping on overflow), null where either side is."""
    return call_function("add", [left, right])
