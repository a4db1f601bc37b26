"""Read any full-precision source format into a :class:`Checkpoint` (openai-whisper names, float32).

One reader per format; each also fills what the writers need beside the weights (alignment heads,
the tokenizer and the suppressed tokens), from the files the format carries, else from
openai-whisper's vocabulary for the model's vocabulary size (:mod:`whisperbench.models.vocabulary`).
A quantized source is refused: converting it would not give "the same weights" elsewhere.
"""

from __future__ import annotations

import json
from pathlib import Path
from functools import partial
from typing import Callable

import numpy as np

from whisperbench.errors import ModelError
from whisperbench.models.checkpoint import Checkpoint, LazyStateDict, default_alignment_heads, openai_name
from whisperbench.models.ctranslate2_format import load_ct2_checkpoint
from whisperbench.models.formats import torch_load
from whisperbench.models.source import SourceModel, cache_dir, memoized

def _unquantized(source: SourceModel) -> None:
    if source.quantized:
        raise ModelError(
            f"{source.path}: {source.format} {source.dtype} is quantized: it runs as it is only in its own "
            f"implementation; converting it elsewhere would not be the same weights. Convert from the "
            "full-precision model it was quantized from")


def _with_vocabulary(ckpt: Checkpoint) -> Checkpoint:
    """Fill the tokenizer and generation settings from openai-whisper's vocabulary when missing."""
    from whisperbench.models.vocabulary import generation_settings, tokenizer_json

    if not ckpt.tokenizer_file or not Path(ckpt.tokenizer_file).is_file():
        ckpt.tokenizer_file = str(tokenizer_json(ckpt.dims["n_vocab"], cache_dir()))
    if not ckpt.generation:
        ckpt.generation = generation_settings(ckpt.dims["n_vocab"])
    return ckpt


def _checkpoint(source: SourceModel, state, heads=None, **extra) -> Checkpoint:
    dims = dict(source.dims)
    return _with_vocabulary(Checkpoint(
        dims=dims, state_dict=state, source_dir=str(source.path),
        alignment_heads=[(int(a), int(b)) for a, b in (heads if heads is not None and len(heads) else
                                                         default_alignment_heads(dims))],
        **extra))


def _read_ctranslate2(source: SourceModel) -> Checkpoint:
    return _with_vocabulary(load_ct2_checkpoint(str(source.path)))


def _tensor_loaders(file: Path, fmt: str) -> dict[str, Callable[[], np.ndarray]]:
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


def _hf_state(source: SourceModel) -> LazyStateDict:
    loaders = {}
    for file in source.weight_files:
        for name, load in _tensor_loaders(file, "transformers").items():
            if name != "proj_out.weight":  # tied to the token embedding
                loaders[openai_name(name)] = load
    return LazyStateDict(loaders)


def _read_transformers(source: SourceModel) -> Checkpoint:
    folder = Path(source.path)
    state = _hf_state(source)
    generation = {}
    heads = None
    gen_file = folder / "generation_config.json"
    if gen_file.is_file():
        config = json.loads(gen_file.read_text(encoding="utf-8"))
        heads = config.get("alignment_heads")
        if config.get("suppress_tokens") is not None:
            generation = {"suppress_ids": config["suppress_tokens"],
                          "suppress_ids_begin": config.get("begin_suppress_tokens") or [],
                          "lang_ids": sorted((config.get("lang_to_id") or {}).values())}
    tokenizer = folder / "tokenizer.json"
    return _checkpoint(source, state, heads, tokenizer_file=str(tokenizer) if tokenizer.is_file() else "",
                       generation=generation)


def _read_openai(source: SourceModel) -> Checkpoint:
    saved = torch_load(Path(source.path), "openai-whisper")
    state = LazyStateDict({name: partial(lambda t: t.float().numpy(), tensor)  # memory-mapped tensors
                           for name, tensor in saved["model_state_dict"].items()})
    return _checkpoint(source, state, saved.get("alignment_heads"))


def _read_ggml(source: SourceModel) -> Checkpoint:
    from whisperbench.models.ggml_format import read_ggml_state

    _, state = read_ggml_state(source.path)
    return _checkpoint(source, state)


def _read_mlx(source: SourceModel) -> Checkpoint:
    from whisper.model import sinusoids

    file = source.weight_files[0]
    loaders: dict[str, Callable[[], np.ndarray]]
    if file.suffix == ".npz":
        with np.load(file) as npz:
            loaders = {name: partial(lambda a: a, npz[name].astype(np.float32)) for name in npz.files}
    else:
        loaders = _tensor_loaders(file, "mlx")
    heads = loaders.pop("alignment_heads")() if "alignment_heads" in loaders else None
    state: dict[str, Callable[[], np.ndarray]] = {}
    for name, load in loaders.items():
        if name in ("encoder.conv1.weight", "encoder.conv2.weight"):  # MLX keeps (out, kernel, in)
            load = partial(lambda f: np.ascontiguousarray(f().swapaxes(1, 2)), load)
        state[name.replace(".mlp1.", ".mlp.0.").replace(".mlp2.", ".mlp.2.")] = load
    if "encoder.positional_embedding" not in state:
        dims = source.dims
        # as mlx-whisper computes them; openai's stored table differs by up to 5e-4 (tiny.en)
        table = sinusoids(dims["n_audio_ctx"], dims["n_audio_state"]).numpy()
        state["encoder.positional_embedding"] = partial(lambda t: t, table)
    return _checkpoint(source, LazyStateDict(state), heads.tolist() if heads is not None else None)


def _not_convertible(source: SourceModel) -> Checkpoint:
    raise ModelError(f"{source.path}: a {source.format} model runs only in Core ML as it is; its weights "
                     "cannot be read back for conversion: convert from the checkpoint it was built from")


_READERS: dict[str, Callable[[SourceModel], Checkpoint]] = {
    "ctranslate2": _read_ctranslate2, "transformers": _read_transformers, "openai-whisper": _read_openai,
    "ggml": _read_ggml, "mlx": _read_mlx, "coreml": _not_convertible, "whisperkit": _not_convertible,
}


def read_checkpoint(source: SourceModel) -> Checkpoint:
    """The float32 weights of ``source`` with alignment heads, tokenizer and generation settings."""
    _unquantized(source)
    ckpt = _READERS[source.format](source)
    expected = expected_names(ckpt.dims)
    missing, unknown = sorted(expected - set(ckpt.state_dict)), sorted(set(ckpt.state_dict) - expected)
    if missing or unknown:
        raise ModelError(f"{source.path}: {source.format} weights do not map onto Whisper: "
                         f"missing {missing[:4]}, unexpected {unknown[:4]}")
    return ckpt


def expected_names(dims: dict) -> set[str]:
    """The openai-whisper parameter names a checkpoint of ``dims`` must hold."""
    names = {"encoder.conv1.weight", "encoder.conv1.bias", "encoder.conv2.weight", "encoder.conv2.bias",
             "encoder.positional_embedding", "encoder.ln_post.weight", "encoder.ln_post.bias",
             "decoder.token_embedding.weight", "decoder.positional_embedding", "decoder.ln.weight",
             "decoder.ln.bias"}
    block = ["attn.query.weight", "attn.query.bias", "attn.key.weight", "attn.value.weight", "attn.value.bias",
             "attn.out.weight", "attn.out.bias", "attn_ln.weight", "attn_ln.bias", "mlp.0.weight", "mlp.0.bias",
             "mlp.2.weight", "mlp.2.bias", "mlp_ln.weight", "mlp_ln.bias"]
    cross = [name.replace("attn", "cross_attn", 1) for name in block[:9]]
    for i in range(dims["n_audio_layer"]):
        names |= {f"encoder.blocks.{i}.{n}" for n in block}
    for i in range(dims["n_text_layer"]):
        names |= {f"decoder.blocks.{i}.{n}" for n in block + cross}
    return names


# -------------------------------------------------------------------------------- fingerprint

_EMBEDDING = {"ctranslate2": "decoder/embeddings/weight", "transformers": "model.decoder.embed_tokens.weight",
              "openai-whisper": "decoder.token_embedding.weight", "ggml": "decoder.token_embedding.weight",
              "mlx": "decoder.token_embedding.weight"}


def _token_embedding(source: SourceModel) -> np.ndarray:
    name = _EMBEDDING[source.format]
    if source.format == "ctranslate2":
        from whisperbench.models.ctranslate2_format import read_ct2_variables

        return read_ct2_variables(source.weight_files[0])[name]
    if source.format == "ggml":
        from whisperbench.models.ggml_format import read_ggml_state

        return read_ggml_state(source.path)[1][name]
    if source.format == "openai-whisper":
        return torch_load(Path(source.path), source.format)["model_state_dict"][name].float().numpy()
    for file in source.weight_files:
        if file.suffix == ".npz":
            with np.load(file) as npz:
                return npz[name]
        if file.suffix == ".bin":
            return torch_load(file, source.format)[name].float().numpy()
        from safetensors import safe_open

        with safe_open(str(file), framework="pt") as fh:
            if name in fh.keys():
                return fh.get_tensor(name).float().numpy()
    raise ModelError(f"{source.path}: no {name}")


def weights_fingerprint(source: SourceModel) -> str | None:
    """sha256 of the token embedding rounded to float16: equal for the same weights in any format and
    full precision (a float16 original and its float32 copy alike), different for a fine-tune.
    None for quantized models and Core ML packages (their weights are not the originals' values)."""
    if source.quantized or source.format not in _EMBEDDING:
        return None
    import hashlib

    def compute() -> str:
        table = np.ascontiguousarray(_token_embedding(source), dtype=np.float32).astype(np.float16)
        return hashlib.sha256(table.tobytes()).hexdigest()

    return memoized(f"fingerprint:{source.sha256}", compute)
