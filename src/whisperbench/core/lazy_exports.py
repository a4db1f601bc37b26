"""Package attributes imported on first use (PEP 562): a package's ``__init__`` names what it exports and where,
and importing one light module of the package (``scoring.normalize``, ``harness.choices``) loads nothing else.
That keeps ``whisperbench compare --help`` from importing pandas, scipy and the harness."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, where: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` that imports ``where[name]`` (a module relative to the package) when
    ``name`` is first read.

    >>> getattr_ = lazy_exports("whisperbench.scoring", {"normalize": ".normalize"})
    >>> getattr_("normalize")("Hello, World!")
    'hello world'
    """

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(where[name], package), name)

    return __getattr__
