"""Harness long-form strategies: window streaming, overlap merging, chunked vs native on real speech."""

from __future__ import annotations

import json
import tracemalloc

import numpy as np
import pytest
import soundfile as sf

from whisperbench.adapters import DecodingOptions
from whisperbench.datasets.audio import SAMPLE_RATE, audio_info, load_audio
from whisperbench.errors import OptionError
from whisperbench.harness import RunRequest, run_evaluation
from whisperbench.harness.longform import LongFormConfig, merge_overlapping, stream_windows
from whisperbench.scoring import normalize
from whisperbench.scoring.wer import align, example_wer

from .conftest import BUNDLED, read_manifest_rows, shared_manifest

LONG_AUDIO = BUNDLED / "longform" / read_manifest_rows(BUNDLED / "longform" / "manifest.jsonl")[0]["audio"]


def window_starts(num_samples: int, chunk: int, step: int) -> list[int]:
    """Start samples of the windows covering ``num_samples``, the last one ending at the end (the test's own)."""
    starts = [0]
    while starts[-1] + chunk < num_samples:
        starts.append(starts[-1] + step)
    return starts


# --- windows ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("chunk_s, step_s", [(30.0, 20.0), (30.0, 30.0), (10.0, 7.5)])
def test_streamed_windows_equal_slices_of_the_whole_file(chunk_s, step_s):
    audio = load_audio(str(LONG_AUDIO))
    chunk, step = int(chunk_s * SAMPLE_RATE), int(step_s * SAMPLE_RATE)
    expected = [audio[s : s + chunk] for s in window_starts(len(audio), chunk, step)]
    got = list(stream_windows(str(LONG_AUDIO), chunk_s, step_s))
    assert len(got) == len(expected) >= 3
    for a, b in zip(got, expected):
        np.testing.assert_array_equal(a, b)
    assert len(got[-1]) > 0 and window_starts(len(audio), chunk, step)[-1] + len(got[-1]) == len(audio)


def test_a_seek_sent_to_the_stream_moves_the_next_window():
    """``send(n)``: the next window starts n samples after the current one, also past the last full one."""
    audio = load_audio(str(LONG_AUDIO))
    windows = stream_windows(str(LONG_AUDIO), 30.0, 30.0)
    start, got = 0, [next(windows)]
    try:
        while True:
            advance = 27 * SAMPLE_RATE if len(got[-1]) > 5 * SAMPLE_RATE else None
            start += advance if advance is not None else len(got[-1])
            got.append(windows.send(advance))
            np.testing.assert_array_equal(got[-1], audio[start : start + 30 * SAMPLE_RATE])
    except StopIteration:
        pass
    assert start + len(got[-1]) >= len(audio) - 5 * SAMPLE_RATE and len(got) == 4  # 0, 27, 54, 81 s


def test_streamed_windows_resample_and_downmix_like_load_audio(tmp_path):
    audio = load_audio(str(LONG_AUDIO))[: 50 * SAMPLE_RATE]
    import soxr

    stereo_44k = soxr.resample(audio, SAMPLE_RATE, 44_100)
    path = tmp_path / "stereo44k.wav"
    sf.write(path, np.stack([stereo_44k, 0.5 * stereo_44k], axis=1), 44_100, subtype="FLOAT")
    whole = load_audio(str(path))
    windows = list(stream_windows(str(path), 30.0, 20.0))
    assert sum(len(w) for w in windows[:1]) == 30 * SAMPLE_RATE
    joined = np.concatenate([windows[0][: 20 * SAMPLE_RATE], windows[1]])
    assert abs(len(joined) - len(whole)) <= 2
    n = min(len(joined), len(whole))
    # incremental and one-shot soxr agree except in the last few samples of the file
    assert np.max(np.abs(joined[: n - 64] - whole[: n - 64])) < 1e-4


def test_streaming_a_two_hour_file_keeps_memory_bounded(tmp_path):
    """A 2 h input (the bundled long-form speech repeated) is read header-first and streamed."""
    speech = (load_audio(str(LONG_AUDIO)) * 32767).astype(np.int16)
    path = tmp_path / "two_hours.wav"
    repeats = int(np.ceil(7200 * SAMPLE_RATE / len(speech)))
    with sf.SoundFile(path, "w", SAMPLE_RATE, 1, subtype="PCM_16") as out:
        for _ in range(repeats):
            out.write(speech)
    duration = audio_info(str(path)).duration_s
    assert duration >= 7200
    tracemalloc.start()
    count = 0
    for window in stream_windows(str(path), 30.0, 20.0):
        count += 1
        assert len(window) <= 30 * SAMPLE_RATE
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    whole_file_mb = duration * SAMPLE_RATE * 4 / 2**20  # what load_audio would hold: ~440 MB
    assert count == len(window_starts(int(duration * SAMPLE_RATE), 30 * SAMPLE_RATE, 20 * SAMPLE_RATE))
    assert peak / 2**20 < 20, f"streaming peaked at {peak / 2**20:.1f} MiB (whole file: {whole_file_mb:.0f} MiB)"


def test_window_geometry_is_validated():
    with pytest.raises(OptionError, match="stride_s"):
        LongFormConfig("chunked", chunk_s=30, stride_s=15)
    with pytest.raises(OptionError, match="chunk_s"):
        LongFormConfig("chunked", chunk_s=40)
    with pytest.raises(OptionError, match="unknown long-form strategy"):
        LongFormConfig("parallel")
    assert LongFormConfig("chunked").step_s == 20 and LongFormConfig("sequential").step_s == 30


# --- merging ----------------------------------------------------------------------------------------

WORDS = (
    "the quick brown fox jumps over the lazy dog while seven wise owls count the silver stars above "
    "an old stone bridge where travellers rest before the long road north begins again at dawn"
).split()


def _windows_of(words, size, overlap):
    step = size - overlap
    return [" ".join(words[i : i + size]) for i in range(0, len(words) - overlap, step)]


def test_merge_recovers_the_text_from_overlapping_windows():
    texts = _windows_of(WORDS, 12, 4)  # each window 12 words, 4 shared with the next
    merged = merge_overlapping(texts, [30.0] * len(texts), overlap_s=10.0)
    assert merged.split() == WORDS


def test_merge_ignores_case_and_punctuation_but_keeps_one_copy():
    left = "The quick brown fox jumps over the lazy dog, while"
    right = "dog while seven wise owls count."
    merged = merge_overlapping([left, right], [30.0, 30.0], overlap_s=10.0)
    assert (
        merged.lower().replace(",", "").split()
        == "the quick brown fox jumps over the lazy dog while seven wise owls count.".split()
    )


def test_merge_without_agreement_cuts_in_the_middle_of_the_overlap():
    left = " ".join(f"a{i}" for i in range(30))  # 1 word/s over 30 s
    right = " ".join(f"b{i}" for i in range(30))
    merged = merge_overlapping([left, right], [30.0, 30.0], overlap_s=10.0).split()
    assert merged == [f"a{i}" for i in range(25)] + [f"b{i}" for i in range(5, 30)]


def test_merge_handles_empty_windows():
    assert merge_overlapping(["", "hello world", ""], [30, 30, 10], 10.0) == "hello world"
    assert merge_overlapping([], [], 10.0) == ""


# --- real speech --------------------------------------------------------------------------------------


def _wer(text: str, reference: str) -> float:
    return example_wer(align(normalize(reference, "english"), normalize(text, "english")))


class LongRuns(dict):
    """openai-whisper on the bundled 84 s item, one run per strategy, each made when a test first asks for it."""

    STRATEGIES = {
        "native": ("native", 1),
        "chunked4": ("chunked", 4),
        "chunked1": ("chunked", 1),
        "sequential": ("sequential", 1),
    }

    def __init__(self, runs):
        super().__init__()
        self.runs = runs

    def __missing__(self, name):
        strategy, batch = self.STRATEGIES[name]
        request = RunRequest(
            adapter="openai-whisper",
            model="tiny.en",
            dataset="tiny-longform",
            runs_dir=str(self.runs),
            name=name,
            long_form=LongFormConfig(strategy),
            warmup=False,
            decoding=DecodingOptions.from_pairs([f"batch_size={batch}"]),
        )
        self[name] = run_evaluation(request)
        return self[name]


@pytest.fixture(scope="module")
def long_runs(tmp_path_factory):
    return LongRuns(tmp_path_factory.mktemp("longform-runs"))


def _hypothesis(result) -> dict:
    return json.loads((result.store.predictions_path).read_text().splitlines()[0])


def test_chunked_transcript_matches_native_long_form(long_runs):
    native, chunked = _hypothesis(long_runs["native"]), _hypothesis(long_runs["chunked4"])
    assert chunked["status"] == "ok" and chunked["extra"]["windows"] == 4  # 84 s: windows at 0, 20, 40, 60 s
    reference = native["transcript"]
    assert _wer(chunked["hypothesis"], reference) <= _wer(native["hypothesis"], reference) + 2.0
    # the merge keeps one copy of the overlaps: as many words as the native transcript, give or take a few
    assert abs(len(chunked["hypothesis"].split()) - len(native["hypothesis"].split())) <= 3


@pytest.mark.slow
def test_batching_windows_does_not_change_the_text(long_runs):
    """Long-form windows batched by 4 or decoded one at a time: the same window texts (the default tier checks
    the same for short-form batches)."""
    assert (
        _hypothesis(long_runs["chunked4"])["extra"]["window_texts"]
        == _hypothesis(long_runs["chunked1"])["extra"]["window_texts"]
    )


def test_strategy_is_recorded_and_part_of_the_run_identity(long_runs, tmp_path):
    info = long_runs["chunked4"].info
    assert info["long_form"] == {"strategy": "chunked", "chunk_s": 30.0, "stride_s": 5.0}
    assert info["adapter_info"]["long_form_algorithm"].startswith("harness chunked: 30 s windows, 5 s stride")
    assert long_runs["native"].info["long_form"] == {"strategy": "native"}
    assert "seek by timestamps" in long_runs["native"].info["adapter_info"]["long_form_algorithm"]
    sequential = _hypothesis(long_runs["sequential"])
    assert sequential["extra"]["windows"] >= 3 and sequential["status"] == "ok"
    assert _wer(sequential["hypothesis"], sequential["transcript"]) <= 5.0  # resumes where a segment was cut
    store = long_runs["chunked4"].store
    again = RunRequest(
        adapter="openai-whisper",
        model="tiny.en",
        dataset="tiny-longform",
        runs_dir=str(store.path.parent),
        name=store.path.name,
        decoding=DecodingOptions.from_pairs(["batch_size=4"]),
        long_form=LongFormConfig("sequential"),
    )
    from whisperbench.errors import RunStoreError

    with pytest.raises(RunStoreError, match="long_form"):
        run_evaluation(again)


def test_short_form_batches_give_the_same_text_as_one_by_one(tmp_path, tiny_short, shared_runs):
    request = RunRequest(
        adapter="openai-whisper",
        model="tiny.en",
        dataset="tiny-shortform",
        runs_dir=str(tmp_path),
        name="b3",
        decoding=DecodingOptions.from_pairs(["batch_size=3"]),
        warmup=False,
        limit=3,
    )
    results = {3: {p.id: p for p in run_evaluation(request).store.read_predictions()}}
    results[1] = {p.id: p for p in shared_runs.reference(tiny_short).predictions if p.id in results[3]}  # one by one
    assert results[1].keys() == results[3].keys() and len(results[1]) == 3
    for key, one in results[1].items():
        batched = results[3][key]
        assert batched.hypothesis == one.hypothesis
        assert batched.extra["batch"]["size"] == 3 and batched.infer_s > 0
    # a batch's time is shared by audio duration: the shares add up to the batch's time
    batches = {}
    for pred in results[3].values():
        batches.setdefault(pred.extra["batch"]["batch_s"], []).append(pred.infer_s)
    for batch_s, shares in batches.items():
        assert sum(shares) == pytest.approx(batch_s, rel=1e-3)


@pytest.mark.slow
@pytest.mark.long_running  # 77 s in CI (2026-11-29); test_chunked_transcript_matches_native_long_form is CI's
def test_chunked_long_form_on_shared_data_is_close_to_native(tmp_path):
    """The chunked strategy against openai-whisper's own loop over the six shared long-form files (497 s): 77 s
    in the clean-clone CI run of d03aacf, so opt-in; the default tier checks the same bound (chunked WER within
    2 points of native) on the bundled 84 s file, and docs/implementations.md records the shared-set figures."""
    manifest = shared_manifest("longform")
    wer = {}
    for strategy in ("native", "chunked"):
        request = RunRequest(
            adapter="openai-whisper",
            model="tiny.en",
            dataset=str(manifest),
            runs_dir=str(tmp_path),
            name=strategy,
            decoding=DecodingOptions.from_pairs(["batch_size=8"]),
            long_form=LongFormConfig(strategy),
            warmup=False,
        )
        result = run_evaluation(request)
        assert result.summary.num_failed == 0
        wer[strategy] = result.summary.wer
    assert wer["chunked"] <= wer["native"] + 2.0, wer


def test_runs_stored_before_strategies_existed_resume_as_native():
    from whisperbench.store.run_info import RunInfo

    def _config_key(info: dict) -> dict:
        return RunInfo.from_dict(info).identity()

    old = {
        "adapter": "openai-whisper",
        "model": "tiny.en",
        "decoding": {},
        "normalizer": "english",
        "dataset": {"form": "long", "source": "x"},
    }
    assert _config_key(old) == _config_key(old | {"long_form": {"strategy": "native"}})
    assert _config_key(old) != _config_key(
        old | {"long_form": {"strategy": "chunked", "chunk_s": 30.0, "stride_s": 5.0}}
    )
    short = old | {"dataset": {"form": "short", "source": "x"}}
    assert _config_key(short)["long_form"] is None
