"""Seams of native long-form decoding: where an implementation's own windows meet, recorded from what it returns
(openai-whisper's and faster-whisper's segment ``seek``, mlx-whisper's segment dicts, transformers' pipeline chunks),
checked against an independent computation on the implementation's own output; one that does not tell records
none and its summary says "30 s marks"."""

from __future__ import annotations

import pytest

from tests.conftest import THREADS
from whisperbench.adapters.base import SEAMS_FROM_DECODER, SEAMS_FROM_PIPELINE, transcript_from_whisper_result
from whisperbench.harness.longform import LongFormConfig
from whisperbench.scoring.metrics import MetricContext
from whisperbench.scoring.timing import summarize
from whisperbench.types import Prediction


def _check_seams(seams: list[float], audio_s: float) -> None:
    assert len(seams) >= 2, seams  # 84 s: at least three 30 s windows
    assert all(a < b for a, b in zip(seams, seams[1:])), seams  # strictly increasing
    assert all(0.0 < seam < audio_s for seam in seams), (seams, audio_s)
    assert all(b - a <= 30.0 for a, b in zip([0.0] + seams, seams))  # a window covers at most 30 s


@pytest.fixture
def long_example(tiny_long):
    from whisperbench.datasets import load_dataset

    return load_dataset(str(tiny_long)).dataset.examples[0]


def _native(adapter_name: str, example, spy_on, attribute: str, monkeypatch) -> tuple:
    """The adapter's native long-form transcript of ``example``, and what the implementation's own call
    (``spy_on.attribute``, wrapped) returned for it."""
    from whisperbench.adapters import DecodingOptions, get_adapter
    from whisperbench.datasets.audio import load_audio

    adapter = get_adapter(adapter_name)("tiny.en", DecodingOptions.from_pairs([THREADS]))
    adapter.load()
    try:
        target = spy_on(adapter)
        original, returned = getattr(target, attribute), []

        def spy(*args, **kwargs):
            out = original(*args, **kwargs)
            returned.append(out)
            return out

        monkeypatch.setattr(target, attribute, spy)
        audio = load_audio(example.audio)
        transcript = adapter.transcribe(audio, example, long_form=True)
        assert LongFormConfig().seams_source(adapter) == SEAMS_FROM_DECODER  # run.json's adapter_info says so
    finally:
        adapter.close()
    return transcript, returned[0], len(audio) / 16000


def test_openai_whisper_native_records_its_own_windows(long_example, monkeypatch):
    """The seams equal the distinct ``seek`` of whisper.transcribe's own segments (mel frames, 100 a second),
    the first window left out."""
    import whisper

    transcript, result, audio_s = _native("openai-whisper", long_example, lambda _: whisper, "transcribe", monkeypatch)
    assert transcript.extra["seams_from"] == SEAMS_FROM_DECODER
    seeks = sorted({s["seek"] for s in result["segments"] if s["text"].strip()})
    assert transcript.extra["seams_s"] == [seek / 100 for seek in seeks[1:]]
    # seek is the window's start: each window's segments begin at or after it
    assert all(s["start"] >= s["seek"] / 100 - 1e-6 for s in result["segments"])
    _check_seams(transcript.extra["seams_s"], audio_s)


def test_faster_whisper_native_records_its_own_windows(long_example, monkeypatch):
    """faster-whisper's Segment.seek counts its feature extractor's frames (hop 160 at 16 kHz): seconds * 100."""
    pytest.importorskip("faster_whisper")
    decoded: list = []

    def keep(adapter):  # the segments generator is consumed by the adapter: record what it yields
        original = adapter.net.transcribe

        class Net:
            @staticmethod
            def transcribe(*args, **kwargs):
                segments, info = original(*args, **kwargs)
                return (decoded.append(s) or s for s in segments), info

        adapter.net = Net()
        return adapter.net

    transcript, _, audio_s = _native("faster-whisper", long_example, keep, "transcribe", monkeypatch)
    assert transcript.extra["seams_from"] == SEAMS_FROM_DECODER
    assert "".join(s.text for s in decoded).strip() == transcript.text
    seeks = sorted({s.seek for s in decoded})
    assert transcript.extra["seams_s"] == [seek / 100 for seek in seeks[1:]]
    assert all(s.start >= s.seek / 100 - 1e-6 for s in decoded)
    _check_seams(transcript.extra["seams_s"], audio_s)


def test_mlx_style_segment_dicts_give_seams_only_for_long_form():
    """mlx-whisper returns openai-whisper's segment dicts: the seams come from their ``seek``, empty windows
    (segments without text) and the first window left out; short-form records none."""
    segments = [
        {"seek": 0, "start": 0.0, "end": 5.0, "text": " a"},
        {"seek": 0, "start": 5.0, "end": 27.0, "text": " b"},
        {"seek": 2700, "start": 27.0, "end": 30.0, "text": " "},  # an empty window: no text gives way here
        {"seek": 3000, "start": 30.0, "end": 50.0, "text": " c"},
        {"seek": 5412, "start": 54.12, "end": 60.0, "text": " d"},
    ]
    result = {"text": "a b c d", "segments": segments, "language": "en"}
    assert transcript_from_whisper_result(result, long_form=True).extra == {
        "seams_s": [30.0, 54.12],
        "seams_from": SEAMS_FROM_DECODER,
    }
    assert transcript_from_whisper_result(result).extra == {}
    # a result whose segments carry no seek (another port) tells nothing
    bare = {"text": "a", "segments": [{"start": 0.0, "end": 1.0, "text": "a"}]}
    assert transcript_from_whisper_result(bare, long_form=True).extra == {}


def test_transformers_chunk_seams_follow_the_pipelines_own_chunks():
    """The seams of the pipeline's chunking are the middles of the overlaps of the chunks its ``chunk_iter``
    yields (called here on a dummy feature extractor, so the chunk starts are the pipeline's own)."""
    pytest.importorskip("transformers")
    import numpy as np
    from transformers.pipelines.automatic_speech_recognition import chunk_iter

    from whisperbench.adapters.transformers import pipeline_chunk_seams

    class Extractor:
        sampling_rate = 16000

        def __call__(self, chunk, **_):
            return {"start": int(chunk[0])}  # the input is the sample index: a chunk's first value is its start

    rate, chunk, stride = 16000, 30 * 16000, 5 * 16000
    for seconds in (29.0, 84.133, 90.0, 95.0, 70.01, 100.0):
        n = int(seconds * rate)
        starts = [
            item["start"] for item in chunk_iter(np.arange(n, dtype=np.float64), Extractor(), chunk, stride, stride)
        ]
        expected = [round((start + stride) / rate, 3) for start in starts[1:]]  # the middle of each 10 s overlap
        assert pipeline_chunk_seams(n, chunk, stride, stride) == expected, seconds


def test_transformers_tells_its_seams_only_when_chunking():
    from whisperbench.adapters import DecodingOptions, get_adapter

    cls = get_adapter("transformers")
    assert cls("tiny.en").native_seams is None  # sequential long-form generate keeps its windows to itself
    assert cls("tiny.en", DecodingOptions.from_pairs(["chunk_length_s=30"])).native_seams == SEAMS_FROM_PIPELINE
    assert LongFormConfig().seams_source(cls("tiny.en")) == "not told (30 s marks)"
    assert LongFormConfig("chunked").seams_source(cls("tiny.en")) == "harness windows"


def test_an_adapter_that_does_not_tell_records_no_seams(shared_runs, tiny_long):
    """whisper.cpp's segments carry no window offsets: no seams are recorded (never guessed), and run.json says so."""
    from whisperbench.adapters import get_adapter

    if get_adapter("whisper-cpp").missing():
        pytest.skip("whisper-cpp not installed")
    assert get_adapter("whisper-cpp").native_seams is None
    run = shared_runs.get("whisper-cpp", tiny_long, THREADS)
    assert "seams_s" not in run.predictions[0].extra
    assert run.meta.adapter_info["long_form_seams"] == "not told (30 s marks)"


def _utterance_prediction(seams: list[float] | None, source: str | None) -> Prediction:
    truth = [
        {"id": "u1", "start": 20.0, "end": 29.5, "text": "the cat"},
        {"id": "u2", "start": 29.6, "end": 40.0, "text": "sat down"},
    ]
    words = [
        {"word": w, "start": s, "end": s + 0.3}
        for w, s in (("the", 21.0), ("cat", 25.0), ("sat", 30.0), ("town", 35.0))
    ]
    pred = Prediction(id="a", transcript="", hypothesis="", words=words)
    pred.extra["true_segments"] = truth
    if seams is not None:
        pred.extra.update(seams_s=seams, seams_from=source)
    return pred


def test_summary_names_where_the_seams_came_from_and_keeps_the_30s_split():
    """A decoder seam at 28.96 s falls in u1 (no errors), the 30 s mark in u2 (one substitution in two words)."""
    told = summarize([_utterance_prediction([28.96], SEAMS_FROM_DECODER)], MetricContext("english"))["utterance_wer"]
    assert told["seams"] == SEAMS_FROM_DECODER
    assert told["at_seams"] == {"utterances": 1, "wer": 0.0}
    assert told["away_from_seams"] == {"utterances": 1, "wer": 50.0}
    assert told["at_30s_marks"] == {
        "at_seams": {"utterances": 1, "wer": 50.0},
        "away_from_seams": {"utterances": 1, "wer": 0.0},
    }
    untold = summarize([_utterance_prediction(None, None)], MetricContext("english"))["utterance_wer"]
    assert untold["seams"] == "30 s marks" and "at_30s_marks" not in untold
    assert untold["at_seams"] == told["at_30s_marks"]["at_seams"]
