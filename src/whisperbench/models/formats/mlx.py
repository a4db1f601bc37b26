"""MLX (mlx-whisper): a folder with ``config.json`` in openai-whisper's names and ``weights.safetensors``
(or ``weights.npz``), possibly quantized (``quantization`` in the config)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from whisperbench.models.checkpoint import Checkpoint, LazyStateDict
from whisperbench.models.formats import (
    DIMS,
    SAFETENSORS_DTYPES,
    Format,
    ModelLayout,
    bad,
    config_has,
    read_json,
    safetensors_header,
)
from whisperbench.models.source import SourceModel


def _inspect(folder: Path) -> ModelLayout:
    config = read_json(folder / "config.json", "mlx")
    dims = {key: int(config[key]) for key in DIMS if key in config}
    if len(dims) != len(DIMS):
        raise bad(folder / "config.json", "mlx", f"no {', '.join(sorted(set(DIMS) - set(dims)))}")
    candidates = [folder / "weights.safetensors", folder / "weights.npz"]
    files = [f for f in candidates if f.is_file()]
    if not files:
        raise bad(folder, "mlx", "config.json but neither weights.safetensors nor weights.npz")
    quantization = config.get("quantization")
    if files[0].suffix == ".safetensors":
        table = safetensors_header(files[0], "mlx")
        conv = table.get("encoder.conv1.weight")
        if conv is None:
            raise bad(files[0], "mlx", "no tensor encoder.conv1.weight")
        if conv["shape"][-1] != dims["n_mels"]:
            raise bad(
                folder,
                "mlx",
                f"config.json says n_mels={dims['n_mels']} but encoder.conv1.weight has shape {conv['shape']}",
            )
        dtype = SAFETENSORS_DTYPES.get(conv["dtype"], conv["dtype"].lower())
    else:
        dtype = "float16"
    if quantization:
        dtype = f"q{quantization.get('bits')}"
    return ModelLayout("mlx", folder, files, dims, dtype, bool(quantization))


def _read(source: SourceModel) -> Checkpoint:
    from whisper.model import sinusoids

    from whisperbench.models.readers import checkpoint_of, tensor_loaders

    file = source.weight_files[0]
    loaders: dict[str, Callable[[], np.ndarray]]
    if file.suffix == ".npz":
        with np.load(file) as npz:
            loaders = {name: partial(lambda a: a, npz[name].astype(np.float32)) for name in npz.files}
    else:
        loaders = tensor_loaders(file, "mlx")
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
    return checkpoint_of(source, LazyStateDict(state), heads.tolist() if heads is not None else None)


def _embedding(source: SourceModel) -> np.ndarray:
    from whisperbench.models.readers import tensor_from_files

    return tensor_from_files(source, "decoder.token_embedding.weight")


FORMAT = Format(
    name="mlx",
    title="MLX",
    rank=50,
    description="MLX folder (config.json in openai names + weights.safetensors or .npz), as mlx-whisper runs it",
    folder=lambda folder: config_has(folder, "n_mels"),
    inspect=_inspect,
    check_dims=True,
    read=_read,
    embedding=_embedding,
    converter="whisperbench.models.mlx:to_mlx",
    default_variant="float16",
    variants="float16/float32/q4/q8",
    native_adapters=("mlx",),
)
