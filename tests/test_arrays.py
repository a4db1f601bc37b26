"""Numeric Arrow columns read from their buffers (whisperbench.scoring.arrays) equal pyarrow's own conversion."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from whisperbench.scoring.arrays import numbers, strings, text

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


def test_a_forked_worker_builds_a_typed_table_without_importing_pandas_and_the_main_process_is_left_alone():
    from tests.conftest import python_probe

    probe = (
        "import multiprocessing, sys\n"
        "import pyarrow as pa\n"
        "from whisperbench.scoring.arrays import arrow_without_pandas, numbers\n"
        "def work(_):\n"
        "    arrow_without_pandas()\n"
        "    schema = pa.schema([('a', pa.int64()), ('b', pa.string()), ('c', pa.float64())])\n"
        "    table = pa.table({'a': [1, None], 'b': ['x', None], 'c': [0.5, None]}, schema=schema)\n"
        "    return 'pandas' in sys.modules, table.to_pylist(), numbers(table['c']).tolist()\n"
        "with multiprocessing.get_context('fork').Pool(1) as pool:\n"
        "    print(pool.map(work, [0])[0])\n"
        "arrow_without_pandas()\n"
        "pa.array([1], pa.int64())\n"
        "print('pandas' in sys.modules)\n"
    )
    out = python_probe(probe)
    assert out.returncode == 0, out.stderr
    worker, main = out.stdout.splitlines()
    assert worker == "(False, [{'a': 1, 'b': 'x', 'c': 0.5}, {'a': None, 'b': None, 'c': None}], [0.5, nan])"
    assert main == "True"  # not a worker: pyarrow goes on importing pandas as it does
