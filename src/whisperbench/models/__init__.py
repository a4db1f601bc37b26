"""Whisper weights offline: known model names, their one source checkpoint, converted formats."""

from .resolve import KNOWN_MODELS, SourceModel, cache_dir, converted, describe_source, list_models, resolve_source

__all__ = ["KNOWN_MODELS", "SourceModel", "cache_dir", "converted", "describe_source", "list_models", "resolve_source"]
