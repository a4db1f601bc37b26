"""The ``>>>`` examples in the package's docstrings are true (they are run, not just read)."""

from __future__ import annotations

import doctest
import importlib

import pytest

from .conftest import REPO

SRC = REPO / "src"
MODULES = sorted(
    ".".join(path.relative_to(SRC).with_suffix("").parts)
    for path in SRC.rglob("*.py")
    if ">>> " in path.read_text(encoding="utf-8")
)


def test_there_are_examples_to_run():
    assert {"whisperbench.core.redact", "whisperbench.core.hashing", "whisperbench.reports.escape"} <= set(MODULES)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
