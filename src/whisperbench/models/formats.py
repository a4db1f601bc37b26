"""Recognise a Whisper model on disk from its contents (never its name) and describe it cheaply.

:func:`inspect_model` reads headers only (config files, the safetensors / ggml / CTranslate2
headers, a memory-mapped ``.pt``): the format, the weight files, the dimensions in openai-whisper's
names, the stored precision and whether it is quantized. Every problem is a :class:`ModelError`
naming the file and the format that was guessed.

>>> sorted(FORMATS)
['coreml', 'ctranslate2', 'ggml', 'mlx', 'openai-whisper', 'transformers', 'whisperkit']
>>> FORMAT_ALIASES["hf"], FORMAT_ALIASES["openai"]
('transformers', 'openai-whisper')
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from whisperbench.errors import ModelError

#: the format names used everywhere (run.json, converters, ``models convert --to``)
FORMATS = ("ctranslate2", "transformers", "openai-whisper", "ggml", "mlx", "coreml", "whisperkit")
#: short names users type
FORMAT_ALIASES = {"hf": "transformers", "openai": "openai-whisper", "ct2": "ctranslate2",
                  "whisper.cpp": "ggml", **{f: f for f in FORMATS}, "flax": "flax"}
DIMS = ("n_mels", "n_vocab", "n_audio_ctx", "n_audio_state", "n_audio_head", "n_audio_layer",
        "n_text_ctx", "n_text_state", "n_text_head", "n_text_layer")


@dataclass
class ModelLayout:
    """What :func:`inspect_model` found: enough to decide, convert and record, without the weights."""

    format: str
    path: Path  # the file or folder an implementation of this format loads
    weight_files: list[Path]
    dims: dict[str, int]
    dtype: str  # float32, float16, bfloat16, int8, q5_0, q4 (MLX 4-bit) ...
    quantized: bool

    @property
    def size_bytes(self) -> int:
        """Total size of the weight files on disk, in bytes."""
        return sum(f.stat().st_size for f in self.weight_files)


def _bad(path: Path, fmt: str, problem: str) -> ModelError:
    return ModelError(f"{path}: read as a {fmt} Whisper model: {problem}")


def _json(path: Path, fmt: str) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise _bad(path, fmt, f"cannot read {path.name}: {exc}") from exc
    if not isinstance(data, dict):
        raise _bad(path, fmt, f"{path.name} is not a JSON object")
    return data


# ------------------------------------------------------------------------------- safetensors


def safetensors_header(path: Path, fmt: str) -> dict[str, dict]:
    """The tensor table of a safetensors file (name -> dtype, shape, data_offsets), checked against its size."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) != 8:
                raise _bad(path, fmt, "safetensors file is shorter than its 8-byte header length")
            (length,) = struct.unpack("<Q", head)
            if length > min(size - 8, 100 << 20):
                raise _bad(path, fmt, f"safetensors header length {length} does not fit the file ({size} bytes)")
            table = json.loads(fh.read(length))
    except OSError as exc:
        raise _bad(path, fmt, f"cannot read: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise _bad(path, fmt, f"safetensors header is not JSON: {exc}") from exc
    table.pop("__metadata__", None)
    end = max((info["data_offsets"][1] for info in table.values()), default=0)
    if 8 + length + end > size:
        raise _bad(path, fmt, f"truncated: its tensors need {8 + length + end} bytes, the file has {size}")
    return table


_SAFETENSORS_DTYPES = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "I8": "int8", "U32": "uint32",
                       "I64": "int64", "U8": "uint8"}


# --------------------------------------------------------------------------------- transformers


_HF_DIMS = {"n_mels": "num_mel_bins", "n_vocab": "vocab_size", "n_audio_ctx": "max_source_positions",
            "n_audio_state": "d_model", "n_audio_head": "encoder_attention_heads", "n_audio_layer": "encoder_layers",
            "n_text_ctx": "max_target_positions", "n_text_state": "d_model", "n_text_head": "decoder_attention_heads",
            "n_text_layer": "decoder_layers"}


def _hf_tensors(folder: Path) -> tuple[list[Path], dict[str, tuple[str, list[int]]]]:
    """Weight files of a transformers folder and name -> (dtype, shape) of its tensors."""
    index = folder / "model.safetensors.index.json"
    if (folder / "model.safetensors").is_file():
        files = [folder / "model.safetensors"]
    elif index.is_file():
        names = sorted(set(_json(index, "transformers").get("weight_map", {}).values()))
        files = [folder / name for name in names]
        missing = [f.name for f in files if not f.is_file()]
        if not files or missing:
            raise _bad(index, "transformers", f"shards missing: {', '.join(missing) or 'weight_map is empty'}")
    elif (folder / "pytorch_model.bin").is_file():
        return [folder / "pytorch_model.bin"], _torch_tensors(folder / "pytorch_model.bin", "transformers")
    else:
        raise _bad(folder, "transformers", "config.json says Whisper but there is no model.safetensors, "
                   "model.safetensors.index.json or pytorch_model.bin")
    tensors = {}
    for file in files:
        for name, info in safetensors_header(file, "transformers").items():
            tensors[name] = (_SAFETENSORS_DTYPES.get(info["dtype"], info["dtype"].lower()), info["shape"])
    return files, tensors


def _torch_tensors(path: Path, fmt: str) -> dict[str, tuple[str, list[int]]]:
    saved = torch_load(path, fmt)
    state = saved.get("model_state_dict", saved) if isinstance(saved, dict) else None
    if not isinstance(state, dict):
        raise _bad(path, fmt, "the pickle holds no state dict")
    return {k: (str(v.dtype).replace("torch.", ""), list(v.shape)) for k, v in state.items() if hasattr(v, "shape")}


def torch_load(path: Path, fmt: str) -> Any:
    """``torch.load`` memory-mapped and without code execution; a clear error for anything else."""
    import torch

    try:
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a bad file
        raise _bad(path, fmt, f"torch cannot load it: {str(exc).splitlines()[0][:200]}") from exc


def _inspect_transformers(folder: Path) -> ModelLayout:
    config = _json(folder / "config.json", "transformers")
    if config.get("model_type") != "whisper":
        raise _bad(folder / "config.json", "transformers",
                   f"model_type is {config.get('model_type')!r}, not 'whisper': not a Whisper model")
    missing = [key for key in set(_HF_DIMS.values()) if key not in config]
    if missing:
        raise _bad(folder / "config.json", "transformers", f"no {', '.join(sorted(missing))}")
    dims = {ours: int(config[theirs]) for ours, theirs in _HF_DIMS.items()}
    files, tensors = _hf_tensors(folder)
    prefix = "model." if any(k.startswith("model.") for k in tensors) else ""
    checks = {f"{prefix}encoder.conv1.weight": (1, "n_mels", "num_mel_bins"),
              f"{prefix}decoder.embed_tokens.weight": (0, "n_vocab", "vocab_size"),
              f"{prefix}encoder.embed_positions.weight": (0, "n_audio_ctx", "max_source_positions")}
    for name, (axis, ours, theirs) in checks.items():
        if name not in tensors:
            raise _bad(files[0], "transformers", f"no tensor {name}")
        if tensors[name][1][axis] != dims[ours]:
            raise _bad(folder, "transformers", f"config.json says {theirs}={dims[ours]} but {name} has "
                       f"shape {tensors[name][1]}")
    _check_layers(folder, "transformers", tensors, dims, f"{prefix}encoder.layers.{{}}.fc1.weight",
                  f"{prefix}decoder.layers.{{}}.fc1.weight", ("encoder_layers", "decoder_layers"))
    dtype = tensors[f"{prefix}encoder.conv1.weight"][0]
    return ModelLayout("transformers", folder, files, dims, dtype, False)


def _check_layers(where: Path, fmt: str, tensors: dict, dims: dict, enc: str, dec: str, names: tuple) -> None:
    for side, pattern, key in (("n_audio_layer", enc, names[0]), ("n_text_layer", dec, names[1])):
        count = 0
        while pattern.format(count) in tensors:
            count += 1
        if count != dims[side]:
            raise _bad(where, fmt, f"the config says {key}={dims[side]} but the weights have {count} such layers")


# ------------------------------------------------------------------------------ openai-whisper


def _inspect_openai(path: Path) -> ModelLayout:
    saved = torch_load(path, "openai-whisper")
    if not isinstance(saved, dict) or "dims" not in saved or "model_state_dict" not in saved:
        raise _bad(path, "openai-whisper", "a torch file without 'dims' and 'model_state_dict'")
    dims = {key: int(saved["dims"][key]) for key in DIMS if key in saved["dims"]}
    if len(dims) != len(DIMS):
        raise _bad(path, "openai-whisper", f"dims lack {', '.join(sorted(set(DIMS) - set(dims)))}")
    state = saved["model_state_dict"]
    conv = state.get("encoder.conv1.weight")
    if conv is None or conv.shape[1] != dims["n_mels"]:
        raise _bad(path, "openai-whisper", f"dims say n_mels={dims['n_mels']} but encoder.conv1.weight has shape "
                   f"{None if conv is None else list(conv.shape)}")
    tensors = {k: (str(v.dtype), list(v.shape)) for k, v in state.items()}
    _check_layers(path, "openai-whisper", tensors, dims, "encoder.blocks.{}.mlp.0.weight",
                  "decoder.blocks.{}.mlp.0.weight", ("n_audio_layer", "n_text_layer"))
    dtype = str(conv.dtype).replace("torch.", "")
    return ModelLayout("openai-whisper", path, [path], dims, dtype, False)


# ------------------------------------------------------------------------------------- ggml


def _inspect_ggml(path: Path) -> ModelLayout:
    from whisperbench.models.ggml_format import TYPE_NAMES, validate_ggml_header

    header = validate_ggml_header(path)
    dims = dict(header.hparams)
    dtype = TYPE_NAMES[header.weight_type]
    return ModelLayout("ggml", path, [path], dims, dtype, header.quantized)


# ----------------------------------------------------------------------------------- mlx


def _inspect_mlx(folder: Path) -> ModelLayout:
    config = _json(folder / "config.json", "mlx")
    dims = {key: int(config[key]) for key in DIMS if key in config}
    if len(dims) != len(DIMS):
        raise _bad(folder / "config.json", "mlx", f"no {', '.join(sorted(set(DIMS) - set(dims)))}")
    candidates = [folder / "weights.safetensors", folder / "weights.npz"]
    files = [f for f in candidates if f.is_file()]
    if not files:
        raise _bad(folder, "mlx", "config.json but neither weights.safetensors nor weights.npz")
    quantization = config.get("quantization")
    if files[0].suffix == ".safetensors":
        table = safetensors_header(files[0], "mlx")
        conv = table.get("encoder.conv1.weight")
        if conv is None:
            raise _bad(files[0], "mlx", "no tensor encoder.conv1.weight")
        if conv["shape"][-1] != dims["n_mels"]:
            raise _bad(folder, "mlx", f"config.json says n_mels={dims['n_mels']} but encoder.conv1.weight has "
                       f"shape {conv['shape']}")
        dtype = _SAFETENSORS_DTYPES.get(conv["dtype"], conv["dtype"].lower())
    else:
        dtype = "float16"
    if quantization:
        dtype = f"q{quantization.get('bits')}"
    return ModelLayout("mlx", folder, files, dims, dtype, bool(quantization))


# ------------------------------------------------------------------------------- CTranslate2


def _inspect_ctranslate2(folder: Path) -> ModelLayout:
    from whisperbench.models.ctranslate2_format import ct2_dims, read_ct2_shapes

    shapes = read_ct2_shapes(folder / "model.bin")
    try:
        dims = ct2_dims(shapes)
    except KeyError as exc:
        raise _bad(folder / "model.bin", "ctranslate2", f"not a Whisper model (no variable {exc.args[0]})") from exc
    first_linear = "encoder/layer_0/ffn/linear_0/weight"
    dtype = shapes[first_linear][0] if first_linear in shapes else shapes["encoder/conv1/weight"][0]
    if not (folder / "config.json").is_file():
        raise _bad(folder, "ctranslate2", "model.bin but no config.json")
    return ModelLayout("ctranslate2", folder, [folder / "model.bin"], dims, dtype, dtype in ("int8", "int16"))


# ------------------------------------------------------------------------------- Core ML


def _coreml_weights(folder: Path) -> list[Path]:
    return sorted(folder.rglob("weight.bin"))


def _inspect_coreml(folder: Path) -> ModelLayout:
    info = _json(folder / "coreml.json", "coreml")
    dims = {k: int(v) for k, v in info.get("dims", {}).items() if k in DIMS}
    return ModelLayout("coreml", folder, _coreml_weights(folder), dims, str(info.get("precision", "float16")), False)


def _inspect_whisperkit(folder: Path) -> ModelLayout:
    dims: dict[str, int] = {}
    if (folder / "config.json").is_file():
        config = _json(folder / "config.json", "whisperkit")
        dims = {ours: int(config[theirs]) for ours, theirs in _HF_DIMS.items() if theirs in config}
    return ModelLayout("whisperkit", folder, _coreml_weights(folder), dims, "float16", False)


def _is_whisperkit(folder: Path) -> bool:
    parts = ("AudioEncoder", "TextDecoder")
    return all(any((folder / f"{p}{ext}").exists() for ext in (".mlmodelc", ".mlpackage")) for p in parts)


# ------------------------------------------------------------------------------- detection


#: format -> (does this folder look like it, inspector)
_FOLDER_FORMATS: dict[str, tuple[Callable[[Path], bool], Callable[[Path], ModelLayout]]] = {
    "ctranslate2": (lambda d: (d / "model.bin").is_file() and not _is_pickle(d / "model.bin"), _inspect_ctranslate2),
    "transformers": (lambda d: _config_has(d, "model_type", "architectures", "d_model")
                     and not _config_has(d, "n_mels"), _inspect_transformers),
    "mlx": (lambda d: _config_has(d, "n_mels"), _inspect_mlx),
    "coreml": (lambda d: (d / "coreml.json").is_file(), _inspect_coreml),
    "whisperkit": (_is_whisperkit, _inspect_whisperkit),
}


def _config_has(folder: Path, *keys: str) -> bool:
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(config, dict) and any(k in config for k in keys)


def _is_pickle(path: Path) -> bool:
    with open(path, "rb") as fh:
        head = fh.read(4)
    return head[:2] == b"PK" or head[:1] == b"\x80"


def _file_format(path: Path) -> Optional[str]:
    """``ggml`` or ``openai-whisper`` when the file's first bytes say so, else None."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return None
    if len(head) == 4 and struct.unpack("<I", head)[0] == 0x67676D6C:
        return "ggml"
    if path.suffix == ".pt" and (head[:2] == b"PK" or head[:1] == b"\x80"):
        return "openai-whisper"
    return None


def _model_files(folder: Path) -> list[tuple[Path, str]]:
    """Single-file models lying in ``folder`` (a ggml ``.bin``, an openai-whisper ``.pt``), by content."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in (".bin", ".pt"))
    return [(p, fmt) for p, fmt in ((p, _file_format(p)) for p in files) if fmt is not None]


def folder_formats(path: Path) -> list[str]:
    """The folder formats ``path`` looks like, from its contents."""
    found = [fmt for fmt, (looks, _) in _FOLDER_FORMATS.items() if looks(path)]
    if (path / "model.bin").is_file() and "transformers" in found and "ctranslate2" in found:
        found.remove("transformers")  # a CTranslate2 folder keeps the transformers config.json beside model.bin
    return found


def detect_format(path: Path) -> str:
    """The format of a file or folder, from its contents; ModelError when none or several match (a folder
    holding a folder model and a ggml .bin or .pt file beside it is several: it says what it found and how
    to choose, ``--model DIR/FILE`` or ``--model FORMAT:DIR``)."""
    if path.is_file():
        fmt = _file_format(path) or ("openai-whisper" if _is_pickle(path) else None)
        if fmt is None:
            with open(path, "rb") as fh:
                head = fh.read(4)
            raise ModelError(f"{path}: not a Whisper model file (not a ggml .bin, magic {head.hex() or 'empty'}, "
                             "and not a torch .pt)")
        return fmt
    if not path.is_dir():
        raise ModelError(f"{path}: no such file or folder")
    found, files = folder_formats(path), _model_files(path)
    if len(found) + len(files) > 1 or (files and not found):
        raise ModelError(f"{path}: {_what_is_there(path, found, files)}")
    if not found:
        listed = ", ".join(sorted(p.name for p in path.iterdir())[:8]) or "nothing"
        raise ModelError(f"{path}: no Whisper model format recognised (it holds {listed}); expected a "
                         "transformers, CTranslate2, MLX, Core ML or WhisperKit folder, a ggml .bin or a .pt")
    return found[0]


def _what_is_there(path: Path, found: list[str], files: list[tuple[Path, str]]) -> str:
    """What a folder holding several models (or only model files) holds, and how to pick one."""
    seen = [f"a {fmt} model" for fmt in found] + [f"{file.name} ({fmt})" for file, fmt in files]
    ways = [f"--model {file}" for file, _ in files[:3]] + [f"--model {fmt}:{path}" for fmt in found]
    head = (f"holds more than one model: {' and '.join(seen)}" if len(seen) > 1
            else f"holds only the model file {seen[0]}")
    return f"{head}; say which to use: {' or '.join(ways)}"


def parse_model_format(model: str) -> tuple[Optional[str], str]:
    """``("transformers", "DIR")`` for ``--model transformers:DIR`` (a format named before a path), else
    ``(None, model)``. Only the format names themselves qualify (``hf:`` and ``openai:`` mean downloads).

    >>> parse_model_format("ggml:/models/tiny"), parse_model_format("hf:openai/whisper-tiny")
    (('ggml', '/models/tiny'), (None, 'hf:openai/whisper-tiny'))
    """
    fmt, sep, rest = model.partition(":")
    if sep and fmt in FORMATS and rest:
        return fmt, rest
    return None, model


def check_format(path: Path, fmt: str) -> None:
    """ModelError unless ``path`` (named with ``--model FORMAT:PATH``) is a model of ``fmt``."""
    if path.is_file():
        if _file_format(path) != fmt and not (fmt == "openai-whisper" and _is_pickle(path)):
            raise ModelError(f"{path}: not a {fmt} model file")
        return
    if fmt in _FOLDER_FORMATS and fmt in folder_formats(path):
        return
    files = [file for file, kind in _model_files(path) if kind == fmt] if path.is_dir() else []
    hint = f" (it holds {files[0].name}: --model {files[0]})" if files else ""
    raise ModelError(f"{path}: no {fmt} model in this folder{hint}")


def inspect_model(path: str | Path, fmt: Optional[str] = None) -> ModelLayout:
    """Detect (unless ``fmt`` is given) and describe the model at ``path``, reading headers only."""
    path = Path(path)
    if fmt is None:
        fmt = detect_format(path)
    else:
        check_format(path, fmt)
    inspectors = {name: inspect for name, (_, inspect) in _FOLDER_FORMATS.items()}
    inspectors |= {"ggml": _inspect_ggml, "openai-whisper": _inspect_openai}
    layout = inspectors[fmt](path)
    if fmt in ("ctranslate2", "transformers", "openai-whisper", "ggml", "mlx"):
        check_dims(path, fmt, layout.dims)
    return layout


def check_dims(path: Path, fmt: str, dims: dict[str, int]) -> None:
    """Whisper's own invariants: 80 or 128 mels, a Whisper vocabulary, heads that divide the width."""
    if dims["n_mels"] not in (80, 128):
        raise _bad(path, fmt, f"n_mels={dims['n_mels']}: Whisper uses 80 (tiny … large-v2) or 128 (large-v3, turbo)")
    if not 51864 <= dims["n_vocab"] <= 51866:
        raise _bad(path, fmt, f"n_vocab={dims['n_vocab']}: Whisper's vocabularies have 51,864 to 51,866 tokens")
    for side in ("audio", "text"):
        if dims[f"n_{side}_state"] % dims[f"n_{side}_head"]:
            raise _bad(path, fmt, f"n_{side}_state={dims[f'n_{side}_state']} is not a multiple of "
                       f"n_{side}_head={dims[f'n_{side}_head']}")
