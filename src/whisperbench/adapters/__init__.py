"""Adapters registered by name. Built-in modules are listed below; third parties add theirs with an
entry point in the group ``whisperbench.adapters`` pointing at an :class:`Adapter` subclass."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from ..errors import WhisperbenchError
from .base import Adapter, DecodingOptions

__all__ = ["Adapter", "DecodingOptions", "register", "get_adapter", "adapter_names", "registry"]

_BUILTIN_MODULES = (
    "recorded",
    "openai_whisper",
    "faster_whisper",
    "transformers",
    "openai_api",
    "whisper_cpp",
    "mlx",
    "jax",
    "ane_torch",
    "coreml",
    "whisperkit",
    "whisperlivekit",
    "whisper_live",
)
_REGISTRY: dict[str, type[Adapter]] = {}
_loaded = False


def register(cls: type[Adapter]) -> type[Adapter]:
    """Class decorator: make an adapter available under ``cls.name``."""
    _REGISTRY[cls.name] = cls
    return cls


def registry() -> dict[str, type[Adapter]]:
    """All registered adapters (built-in first, then entry points)."""
    global _loaded
    if not _loaded:
        for module in _BUILTIN_MODULES:
            importlib.import_module(f"{__name__}.{module}")
        for ep in entry_points(group="whisperbench.adapters"):
            cls = ep.load()
            _REGISTRY.setdefault(cls.name, cls)
        _loaded = True
    return _REGISTRY


def adapter_names() -> list[str]:
    """Every registered adapter's name (built in, entry points, imported), sorted."""
    return sorted(registry())


def get_adapter(name: str) -> type[Adapter]:
    """The adapter class called ``name``, or given as ``package.module:Class`` (an unregistered adapter, e.g.
    a team's own wrapper, importable where the run and its worker processes start); a clear error otherwise."""
    table = registry()
    if name in table:
        return table[name]
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
        f"unknown adapter {name!r}; known adapters: {', '.join(sorted(table))} (or package.module:Class)"
    )
