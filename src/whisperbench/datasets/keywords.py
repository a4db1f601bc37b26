"""The words that matter of each example (docs/keywords.md): a manifest's ``keywords`` column (a list, or one string
split on ``;`` or ``|``; ``--keywords-column`` maps another name) and a ``--keywords FILE`` of terms, one a line,
that every example gets (as OpenBench's keyword dictionary). A term may have several words. What the
``keywords`` metric (``scoring/keywords.py``) counts and ``run --prompt-from-keywords`` prompts with.

>>> terms_of("Wojciech; New York |  GDPR", "qa.jsonl line 3")
['Wojciech', 'New York', 'GDPR']
>>> terms_of(["Kraków", "Łódź"], "qa.jsonl line 4")
['Kraków', 'Łódź']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ..types import Dataset

#: what separates the terms of a keywords cell written as one string
SEPARATORS = re.compile(r"[;|]")


def terms_of(value: Any, where: str) -> list[str]:
    """The terms of one keywords cell (``where`` names the row for the error): a list of strings, or a string
    split on ``;`` or ``|``; blanks around a term dropped, empty ones left out, repeats kept once. Anything else
    (a number, a list holding a non-string): DatasetError naming ``where``.

    >>> terms_of("a;;b; a", "row 1")
    ['a', 'b']
    >>> terms_of(3, "row 2")
    Traceback (most recent call last):
    whisperbench.errors.DatasetError: row 2: keywords must be a list of strings or a string split on ';' or '|', not int
    """
    if isinstance(value, str):
        items: Sequence[Any] = SEPARATORS.split(value)
    elif isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        items = value
    else:
        kind = type(value).__name__ if not isinstance(value, (list, tuple)) else "a list holding a non-string"
        raise DatasetError(f"{where}: keywords must be a list of strings or a string split on ';' or '|', not {kind}")
    return list(dict.fromkeys(term.strip() for term in items if term.strip()))


def read_keywords_file(path: str) -> list[str]:
    """The terms of a keywords file: one a line (UTF-8), blank lines and ``#`` comments skipped. A missing or
    unreadable file, or one without a term: DatasetError naming it."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"--keywords {path}: cannot read it: {exc}") from None
    terms = list(dict.fromkeys(s for line in lines if (s := line.strip()) and not s.startswith("#")))
    if not terms:
        raise DatasetError(f"--keywords {path}: no term in it (one term a line)")
    return terms


def with_keywords(dataset: Dataset, terms: Sequence[str]) -> None:
    """Give every example of ``dataset`` the ``terms`` (a keywords file's) beside those of its own column."""
    for example in dataset.examples:
        example.extra["keywords"] = list(dict.fromkeys([*example.extra.get("keywords", ()), *terms]))
