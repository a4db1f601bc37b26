"""Flax (transformers' JAX model): a conversion target only, for the ``jax`` adapter; never detected."""

from __future__ import annotations

from whisperbench.models.formats import Format

FORMAT = Format(
    name="flax",
    title="Flax",
    rank=80,
    description="transformers' Flax weights for the jax adapter (written, never read)",
    converter="whisperbench.models.flax:to_flax",
    native_adapters=("jax",),
)
