"""Read any full-precision source format into a :class:`Checkpoint` (openai-whisper names, float32).

Each format's reader is its :class:`~whisperbench.models.formats.Format`'s ``read`` (in
:mod:`whisperbench.models.formats`); the helpers here are what they share. Each also fills what the writers
need beside the weights (alignment heads, the tokenizer and the suppressed tokens), from the files the
format carries, else from openai-whisper's vocabulary for the model's vocabulary size
(:mod:`whisperbench.models.vocabulary`). A quantized source is refused: converting it would not give
"the same weights" elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.checkpoint import Checkpoint, default_alignment_heads
from whisperbench.models.formats import get_format, torch_load
from whisperbench.models.source import SourceModel, cache_dir, memoized


def _unquantized(source: SourceModel) -> None:
    if source.quantized:
        raise ModelError(
            f"{source.path}: {source.format} {source.dtype} is quantized: it runs as it is only in its own "
            f"implementation; converting it elsewhere would not be the same weights. Convert from the "
            "full-precision model it was quantized from"
        )


def with_vocabulary(ckpt: Checkpoint) -> Checkpoint:
    """Fill the tokenizer and generation settings from openai-whisper's vocabulary when missing."""
    from whisperbench.models.vocabulary import generation_settings, tokenizer_json

    if not ckpt.tokenizer_file or not Path(ckpt.tokenizer_file).is_file():
        ckpt.tokenizer_file = str(tokenizer_json(ckpt.dims["n_vocab"], cache_dir()))
    if not ckpt.generation:
        ckpt.generation = generation_settings(ckpt.dims["n_vocab"])
    return ckpt


def checkpoint_of(source: SourceModel, state, heads=None, **extra) -> Checkpoint:
    """A checkpoint of ``source``'s dimensions: ``state`` (openai names), its alignment heads (else the
    default ones for its size) and the vocabulary filled in."""
    dims = dict(source.dims)
    return with_vocabulary(
        Checkpoint(
            dims=dims,
            state_dict=state,
            source_dir=str(source.path),
            alignment_heads=[
                (int(a), int(b))
                for a, b in (heads if heads is not None and len(heads) else default_alignment_heads(dims))
            ],
            **extra,
        )
    )


def tensor_loaders(file: Path, fmt: str) -> dict[str, Callable[[], np.ndarray]]:
    """name -> loader of each tensor of a safetensors file (memory-mapped) or a torch .bin, as float32."""
    if file.suffix == ".bin":
        tensors = torch_load(file, fmt)  # memory-mapped
        return {name: partial(lambda t: t.float().numpy(), tensor) for name, tensor in tensors.items()}
    from safetensors import safe_open

    def load(name: str) -> np.ndarray:
        try:
            with safe_open(str(file), framework="pt") as fh:  # torch: numpy has no bfloat16
                return fh.get_tensor(name).float().numpy()
        except Exception as exc:  # noqa: BLE001 - safetensors raises its own error types
            raise ModelError(f"{file}: cannot read tensor {name}: {exc}") from exc

    try:
        with safe_open(str(file), framework="pt") as fh:
            names = list(fh.keys())
    except Exception as exc:  # noqa: BLE001
        raise ModelError(f"{file}: cannot read safetensors: {exc}") from exc
    return {name: partial(load, name) for name in names}


def read_checkpoint(source: SourceModel) -> Checkpoint:
    """The float32 weights of ``source`` with alignment heads, tokenizer and generation settings."""
    _unquantized(source)
    fmt = get_format(source.format)
    if fmt.read is None:
        raise ModelError(f"{source.path}: {fmt.unreadable or f'a {fmt.name} model cannot be read back'}")
    ckpt = fmt.read(source)
    expected = expected_names(ckpt.dims)
    missing, unknown = sorted(expected - set(ckpt.state_dict)), sorted(set(ckpt.state_dict) - expected)
    if missing or unknown:
        raise ModelError(
            f"{source.path}: {source.format} weights do not map onto Whisper: "
            f"missing {missing[:4]}, unexpected {unknown[:4]}"
        )
    return ckpt


def expected_names(dims: dict) -> set[str]:
    """The openai-whisper parameter names a checkpoint of ``dims`` must hold."""
    names = {
        "encoder.conv1.weight",
        "encoder.conv1.bias",
        "encoder.conv2.weight",
        "encoder.conv2.bias",
        "encoder.positional_embedding",
        "encoder.ln_post.weight",
        "encoder.ln_post.bias",
        "decoder.token_embedding.weight",
        "decoder.positional_embedding",
        "decoder.ln.weight",
        "decoder.ln.bias",
    }
    block = [
        "attn.query.weight",
        "attn.query.bias",
        "attn.key.weight",
        "attn.value.weight",
        "attn.value.bias",
        "attn.out.weight",
        "attn.out.bias",
        "attn_ln.weight",
        "attn_ln.bias",
        "mlp.0.weight",
        "mlp.0.bias",
        "mlp.2.weight",
        "mlp.2.bias",
        "mlp_ln.weight",
        "mlp_ln.bias",
    ]
    cross = [name.replace("attn", "cross_attn", 1) for name in block[:9]]
    for i in range(dims["n_audio_layer"]):
        names |= {f"encoder.blocks.{i}.{n}" for n in block}
    for i in range(dims["n_text_layer"]):
        names |= {f"decoder.blocks.{i}.{n}" for n in block + cross}
    return names


# -------------------------------------------------------------------------------- fingerprint


def tensor_from_files(source: SourceModel, name: str) -> np.ndarray:
    """Tensor ``name`` as float32 from the first of ``source``'s weight files holding it (``.npz``, a torch
    ``.bin`` or safetensors)."""
    for file in source.weight_files:
        if file.suffix == ".npz":
            with np.load(file) as npz:
                return npz[name]
        if file.suffix == ".bin":
            return torch_load(file, source.format)[name].float().numpy()
        from safetensors import safe_open

        with safe_open(str(file), framework="pt") as fh:
            if name in fh.keys():  # noqa: SIM118 - a safetensors file, not a dict: no __contains__
                return fh.get_tensor(name).float().numpy()
    raise ModelError(f"{source.path}: no {name}")


def weights_fingerprint(source: SourceModel) -> str | None:
    """sha256 of the token embedding rounded to float16: equal for the same weights in any format and
    full precision (a float16 original and its float32 copy alike), different for a fine-tune.
    None for quantized models and formats without one (Core ML packages: their weights are not the originals'
    values)."""
    embedding = get_format(source.format).embedding
    if source.quantized or embedding is None:
        return None
    import hashlib

    def compute() -> str:
        table = np.ascontiguousarray(embedding(source), dtype=np.float32).astype(np.float16)
        return hashlib.sha256(table.tobytes()).hexdigest()

    return memoized(f"fingerprint:{source.sha256}", compute)
