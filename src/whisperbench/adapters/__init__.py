"""Adapters by name (:data:`ADAPTERS`): each module of this package that defines ``ADAPTER``; third parties add
theirs with an entry point in the group ``whisperbench.adapters`` pointing at an :class:`Adapter` subclass."""

from __future__ import annotations

import importlib

from ..core.registry import Registry, module_item, package_items
from ..errors import WhisperbenchError
from .base import Adapter, DecodingOptions

__all__ = ["ADAPTERS", "Adapter", "DecodingOptions", "register", "get_adapter", "adapter_names", "registry"]

#: every adapter: each module of this package that defines ``ADAPTER`` (a new implementation is one module), then
#: installed packages' (entry-point group ``whisperbench.adapters``), then those :func:`register` adds
ADAPTERS: Registry[type[Adapter]] = Registry(
    "adapter",
    builtin=lambda: package_items(__name__, "ADAPTER"),
    kind=lambda cls: isinstance(cls, type) and issubclass(cls, Adapter),
    group="whisperbench.adapters",
    guess=lambda name: module_item(f"{__name__}.{name.replace('-', '_')}", "ADAPTER"),  # "whisper-cpp": whisper_cpp
)


def register(cls: type[Adapter]) -> type[Adapter]:
    """Class decorator: make an adapter (a test's, a team's own) available under ``cls.name``."""
    return ADAPTERS.add(cls)


def registry() -> dict[str, type[Adapter]]:
    """All adapters by name (built in, then entry points, then registered)."""
    return {cls.name: cls for cls in ADAPTERS.items()}


def adapter_names() -> list[str]:
    """Every registered adapter's name (built in, entry points, imported), sorted."""
    return sorted(registry())


def get_adapter(name: str) -> type[Adapter]:
    """The adapter class called ``name``, or given as ``package.module:Class`` (an unregistered adapter, e.g.
    a team's own wrapper, importable where the run and its worker processes start); a clear error otherwise."""
    found = ADAPTERS.find(name)
    if found is not None:
        return found
    if ":" in name:
        module, _, attribute = name.partition(":")
        try:
            cls = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError) as exc:
            raise WhisperbenchError(f"adapter {name!r}: cannot import {attribute} from {module}: {exc}") from exc
        if not (isinstance(cls, type) and issubclass(cls, Adapter)):
            raise WhisperbenchError(f"adapter {name!r} is not a whisperbench Adapter subclass")
        return cls
    raise WhisperbenchError(
        f"unknown adapter {name!r}; known adapters: {', '.join(sorted(ADAPTERS.names()))} (or package.module:Class)"
    )
