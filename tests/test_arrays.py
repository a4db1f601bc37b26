"""Arrow columns built from and read into buffers (whisperbench.scoring.arrays) equal pyarrow's own conversions."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whisperbench.scoring.arrays import array, from_numpy, numbers, scalar, strings, table, text

TYPES = {
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "uint8": (pa.uint8(), st.integers(0, 255)),
    "float64": (pa.float64(), st.floats(allow_nan=True, allow_infinity=True)),
    "float32": (pa.float32(), st.floats(width=32, allow_nan=False)),
    "bool": (pa.bool_(), st.booleans()),
}


@st.composite
def columns(draw):
    arrow_type, values = TYPES[draw(st.sampled_from(sorted(TYPES)))]
    chunks = []
    for _ in range(draw(st.integers(0, 3))):
        items = draw(st.lists(st.one_of(st.none(), values) if draw(st.booleans()) else values, max_size=40))
        array = pa.array(items, arrow_type)
        start = draw(st.integers(0, len(items)))  # a slice: an offset into the buffers, as a table's row range has
        chunks.append(array.slice(start, draw(st.integers(0, len(items) - start))))
    return pa.chunked_array(chunks, arrow_type)


@settings(max_examples=300, deadline=None)
@given(columns())
def test_a_numeric_column_reads_as_pyarrow_converts_it_nulls_as_nan(column):
    got = numbers(column)
    values = column.to_pylist()
    assert len(got) == len(values)
    if column.null_count == 0 or column.type != pa.bool_():  # pyarrow's own conversion, type and all
        expected = column.to_numpy()
        assert got.dtype == expected.dtype
        np.testing.assert_array_equal(got, expected)  # NaN equals NaN here
    else:  # pyarrow gives objects (True, False, None): here 1.0, 0.0, NaN
        assert got.dtype == np.float64
        np.testing.assert_array_equal(got, [np.nan if v is None else float(v) for v in values])
    np.testing.assert_array_equal(numbers(column, np.float64), np.asarray(got, dtype=np.float64))


def test_an_all_null_column_is_nan_and_a_text_column_is_refused():
    assert np.isnan(numbers(pa.chunked_array([pa.nulls(3)]))).all()
    with pytest.raises(TypeError, match="not a numeric column: string"):
        numbers(pa.chunked_array([pa.array(["a"])]))


def test_texts_and_a_text_scalar_built_from_bytes():
    assert text("Grüße, 你好") == pa.scalar("Grüße, 你好", pa.string())
    assert strings(pa.chunked_array([["a", None], ["ü"]])).tolist() == ["a", None, "ü"]


BUILT = {
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "float64": (pa.float64(), st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(2**53), 2**53))),
    "bool": (pa.bool_(), st.booleans()),
    "string": (pa.string(), st.text()),
}


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(BUILT)), st.data())
def test_a_column_built_from_buffers_equals_the_one_pyarrow_converts(name, data):
    arrow_type, values = BUILT[name]
    items = data.draw(st.lists(st.one_of(st.none(), values) if data.draw(st.booleans()) else values, max_size=40))
    got, expected = array(items, arrow_type), pa.array(items, arrow_type)
    got.validate(full=True)
    assert got.type == expected.type and got.null_count == expected.null_count
    assert got.equals(expected) or _same_with_nan(got.to_pylist(), expected.to_pylist())


def _same_with_nan(a, b) -> bool:  # Arrow's equality says NaN != NaN
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b))


def test_a_table_built_from_buffers_refuses_what_pyarrow_refuses_and_keeps_its_schema():
    schema = pa.schema([("n", pa.int64()), ("s", pa.string()), ("x", pa.float64()), ("b", pa.bool_())])
    columns = {"n": [1, None, 3], "s": ["a", "", None], "x": [None, 0.5, float("inf")], "b": [True, None, False]}
    assert table(columns, schema).equals(pa.table(columns, schema=schema))
    assert table({name: [] for name in schema.names}, schema).equals(schema.empty_table())
    for refused in ([1, 2.5], [1, None, 2.5], [None, 2.5]):
        with pytest.raises(TypeError, match="not int64 values"):
            array(refused, pa.int64())
    with pytest.raises(TypeError, match="not a numeric column: list"):
        array([[1]], pa.list_(pa.int64()))


def test_score_tables_are_built_without_importing_pandas_in_one_process_and_in_forked_workers():
    from tests.conftest import python_probe

    probe = (
        "import multiprocessing, sys\n"
        "import pyarrow as pa\n"
        "from whisperbench.scoring.arrays import numbers, table\n"
        "schema = pa.schema([('a', pa.int64()), ('b', pa.string()), ('c', pa.float64())])\n"
        "def work(_):\n"
        "    built = table({'a': [1, None], 'b': ['x', None], 'c': [0.5, None]}, schema)\n"
        "    return 'pandas' in sys.modules, built.to_pylist(), numbers(built['c']).tolist()\n"
        "with multiprocessing.get_context('fork').Pool(1) as pool:\n"
        "    print(pool.map(work, [0])[0])\n"
        "print(work(0))\n"
    )
    out = python_probe(probe)
    assert out.returncode == 0, out.stderr
    expected = "(False, [{'a': 1, 'b': 'x', 'c': 0.5}, {'a': None, 'b': None, 'c': None}], [0.5, nan])"
    assert out.stdout.splitlines() == [expected, expected]


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["int64", "int32", "uint8", "float64", "float32", "bool"]), st.data())
def test_an_array_made_from_a_numpy_buffer_equals_the_one_pyarrow_converts(name, data):
    arrow_type, values = TYPES[name]
    items = np.array(data.draw(st.lists(values, max_size=40)), dtype=arrow_type.to_pandas_dtype())
    start = data.draw(st.integers(0, len(items)))
    view = items[start:][:: data.draw(st.sampled_from([1, 2]))]  # an offset and a stride, as slices give
    got = from_numpy(view)
    got.validate(full=True)
    assert got.type == pa.array(view).type
    assert got.equals(pa.array(view)) or _same_with_nan(got.to_pylist(), pa.array(view).to_pylist())


def test_scalars_made_from_buffers_equal_pyarrows_and_a_table_refuses_what_is_no_flat_numeric_array():
    for value, arrow_type in (("ok", pa.string()), ("", pa.string()), (False, pa.bool_()), (7, pa.int32())):
        assert scalar(value, arrow_type) == pa.scalar(value, arrow_type)
    assert text("Grüße") == pa.scalar("Grüße")
    with pytest.raises(TypeError, match="not a one-dimensional numeric array"):
        from_numpy(np.array([["a"]]))
