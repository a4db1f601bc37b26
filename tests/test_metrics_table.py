"""docs/metrics.md's table of every figure names the tests that check it against its peer: each named test exists,
so the table cannot point at a check that is gone."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _named_tests(text: str) -> list[tuple[str, str]]:
    """(file, test) of every `tests/FILE.py::test_name` and of every `::test_name` after one in the same cell."""
    out = []
    for cell in re.findall(r"\|([^|\n]*tests/[^|\n]*)", text):
        current = None
        for path, name in re.findall(r"(tests/[\w/]+\.py)?::(test_\w+)", cell):
            current = path or current
            out.append((current, name))
    return out


def test_every_test_the_metrics_table_names_exists():
    text = (ROOT / "docs" / "metrics.md").read_text(encoding="utf-8")
    table = text.split("## Every figure and what it is checked against", 1)[1].split("\n## ", 1)[0]
    named = _named_tests(table)
    assert len(named) >= 25
    for path, name in named:
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        defined = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
        assert name in defined, f"docs/metrics.md names {path}::{name}, which does not exist"
