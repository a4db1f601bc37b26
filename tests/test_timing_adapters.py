"""Real implementations store their segment and word times: present when asked, monotone, inside the audio;
absent (None) when not asked; and two implementations of the same algorithm on the same weights agree."""

from __future__ import annotations

import json

import pytest

from tests.conftest import THREADS
from whisperbench.harness.longform import TimedPart, _central, stitch_timing
from whisperbench.scoring.normalize import normalize
from whisperbench.scoring.timing import parity
from whisperbench.types import Segment, Transcript, Word

CLIP = "1089-134691-0001"  # 5.4 s of clean read speech
WORDS_ON = ("word_timestamps=true", "without_timestamps=false", THREADS)
#: openai-whisper and faster-whisper both align words by DTW over the same alignment heads' cross-attention: on
#: the same weights every commonly-correct word starts within this many seconds in both
AGREEMENT_S = 0.04


@pytest.fixture(scope="module")
def one_clip(tmp_path_factory):
    from tests.conftest import BUNDLED, read_manifest_rows

    rows = [r for r in read_manifest_rows(BUNDLED / "shortform" / "manifest.jsonl") if r["id"] == CLIP]
    path = tmp_path_factory.mktemp("timing-clip") / "manifest.jsonl"
    path.write_text("".join(json.dumps(dict(r, audio=str(BUNDLED / "shortform" / r["audio"]))) + "\n" for r in rows))
    return path


def _check_times(items: list[dict], audio_s: float, label: str) -> None:
    assert items, label
    starts = [item["start"] for item in items]
    assert starts == sorted(starts), (label, starts)  # monotone
    for item in items:
        assert 0.0 <= item["start"] <= item["end"] <= audio_s + 0.02, (label, item, audio_s)


@pytest.mark.parametrize("adapter", ["openai-whisper", "faster-whisper", "transformers", "whisper-cpp"])
def test_adapter_stores_monotone_segment_and_word_times(shared_runs, one_clip, adapter):
    from whisperbench.adapters import get_adapter

    if get_adapter(adapter).missing():
        pytest.skip(f"{adapter} not installed")
    run = shared_runs.get(adapter, one_clip, *WORDS_ON)
    pred = run.predictions[0]
    assert pred.status == "ok", pred.error
    assert run.meta.decoding["word_timestamps"] is True  # the run records that it had word timing
    _check_times(pred.segments, pred.audio_s, f"{adapter} segments")
    _check_times(pred.words, pred.audio_s, f"{adapter} words")
    # the words are the transcript's words, in order
    assert normalize(" ".join(w["word"] for w in pred.words)) == normalize(pred.hypothesis)
    assert run.summary.metrics["timing"]["examples_with_words"] == 1


def test_openai_whisper_and_faster_whisper_word_times_agree(shared_runs, one_clip):
    reference = shared_runs.get("openai-whisper", one_clip, *WORDS_ON)
    candidate = shared_runs.get("faster-whisper", one_clip, *WORDS_ON)
    result = parity(reference.predictions, candidate.predictions, "english", tolerance_s=AGREEMENT_S)
    assert result["words"] >= 15  # of the clip's 17 words
    assert result["within_tolerance"] == 100.0, result


def test_times_are_absent_when_not_asked(shared_runs, one_clip):
    run = shared_runs.get("faster-whisper", one_clip, THREADS)
    pred = run.predictions[0]
    # short-form is decoded without timestamps by default: its one segment spans the clip, so nothing is stored
    assert pred.segments is None and pred.words is None
    assert "timing" not in run.summary.metrics
    assert '"words": null' in (run.store.path / "predictions.jsonl").read_text()


def test_sequential_windows_are_offset_to_file_times(shared_runs, one_clip):
    from whisperbench.harness.longform import LongFormConfig

    run = shared_runs.get(
        "openai-whisper", one_clip, *WORDS_ON, form="long", long_form=LongFormConfig("sequential", chunk_s=3.0)
    )
    pred = run.predictions[0]
    assert pred.extra["windows"] >= 2
    _check_times(pred.segments, pred.audio_s, "stitched segments")
    _check_times(pred.words, pred.audio_s, "stitched words")
    assert pred.words[-1]["start"] > 3.0  # later windows' words are in file time, not window time


def test_chunked_windows_keep_the_times_outside_their_strides():
    def part(offset: float, *starts: float) -> TimedPart:
        segments = [Segment(s, s + 1.0, f"s{s}") for s in starts]
        return TimedPart(Transcript("", segments, [Word(f"w{s}", s, s + 1.0) for s in starts]), offset, 10.0)

    stride = 2.0
    parts = [part(0.0, 0.5, 7.5, 8.5), part(6.0, 0.5, 1.5, 5.0, 9.0)]
    kept = [_central(p, stride, i == 0, i == len(parts) - 1) for i, p in enumerate(parts)]
    segments, words = stitch_timing(kept)
    # window 0 keeps middles < 8 s (0.5-1.5, 7.5-8.5 is 8.0: out); window 1 keeps middles >= 2 s of its own time
    assert [s.start for s in segments] == [0.5, 6.0 + 1.5, 6.0 + 5.0, 6.0 + 9.0]
    assert [w.start for w in words] == [s.start for s in segments]


def test_alignment_heads_of_a_pruned_model_refuse_only_word_timing(tmp_path, one_clip, caplog, capsys):
    from .conftest import needs_adapter

    needs_adapter("openai-whisper", "tiny.en")
    import torch

    from whisperbench.cli import main
    from whisperbench.models import converted

    saved = torch.load(converted("tiny.en", "openai-whisper"), weights_only=True, map_location="cpu")
    saved["alignment_heads"] = [[5, 0]]  # tiny.en has 4 decoder layers: the parent's heads of a pruned fine-tune
    pruned = tmp_path / "pruned.pt"
    torch.save(saved, pruned)
    run = [
        "run",
        "--adapter",
        "openai-whisper",
        "--model",
        str(pruned),
        "--dataset",
        str(one_clip),
        "--runs-dir",
        str(tmp_path / "runs"),
        "--no-warmup",
        "-o",
        THREADS,
    ]
    assert main(run + ["-o", "word_timestamps=true", "--name", "words"]) == 2
    assert "word timing refused" in capsys.readouterr().err
    with caplog.at_level("WARNING"):
        assert main(run + ["--name", "text"]) == 0
    assert "alignment head (layer 5, head 0) does not exist" in caplog.text
