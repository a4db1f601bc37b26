"""The ``whisperkit`` adapter's reading of WhisperKit's ``--report`` JSON, on Linux (whisperkit-cli runs only on
macOS: the real CLI run is ``test_whisperkit_cli_transcribes_the_bundled_set`` in test_coreml.py, skipped here).

The report below is written in the structure WhisperKit's encoder produces, derived from argmaxinc/WhisperKit's
Swift source: ``Sources/WhisperKit/Core/ResultWriter.swift`` (``WriteJSON``: ``JSONEncoder`` with
``.prettyPrinted`` and no key strategy, so the Swift property names are the keys, ``"key" : value``) and
``Sources/WhisperKit/Core/Models.swift`` (``TranscriptionResult``, ``TranscriptionSegment``, ``WordTiming``;
``words`` and ``seekTime`` are optionals, left out when nil; ``tokenLogProbs`` is ``[[Int: Float]]``, whose Int
keys the encoder writes as strings). Times are seconds; ``seek`` counts 16 kHz samples
(``Sources/WhisperKit/Core/Text/SegmentSeeker.swift``: ``timeOffset = seek / sampleRate``). The values are a
made-up long-form transcript of three decoding windows (the second starting at 28.94 s = sample 463040; the
third, at 35 s, produced no text, so it marks no seam).
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from whisperbench.adapters import DecodingOptions
from whisperbench.adapters.whisperkit import WhisperKitAdapter, read_report, transcript_from_report, whisperkit_command
from whisperbench.types import Example

TIMINGS = """{
    "pipelineStart" : 754000000.125,
    "firstTokenTime" : 754000000.5,
    "inputAudioSeconds" : 35.5,
    "modelLoading" : 0.75,
    "prewarmLoadTime" : 0,
    "encoderLoadTime" : 0.25,
    "decoderLoadTime" : 0.375,
    "encoderSpecializationTime" : 0,
    "decoderSpecializationTime" : 0,
    "tokenizerLoadTime" : 0.0625,
    "audioLoading" : 0.015625,
    "audioProcessing" : 0.001,
    "logmels" : 0.02,
    "encoding" : 0.12,
    "prefill" : 0.0001,
    "decodingInit" : 0.003,
    "decodingLoop" : 1.25,
    "decodingPredictions" : 0.8,
    "decodingFiltering" : 0.05,
    "decodingSampling" : 0.02,
    "decodingFallback" : 0,
    "decodingWindowing" : 0.01,
    "decodingKvCaching" : 0.04,
    "decodingWordTimestamps" : 0.09,
    "decodingNonPrediction" : 0.2,
    "totalAudioProcessingRuns" : 2,
    "totalLogmelRuns" : 2,
    "totalEncodingRuns" : 2,
    "totalDecodingLoops" : 61,
    "totalKVUpdateRuns" : 61,
    "totalTimestampAlignmentRuns" : 2,
    "totalDecodingFallbacks" : 0,
    "totalDecodingWindows" : 2,
    "fullPipeline" : 1.5
  }"""

WORDS_0 = """[
        { "word" : " And", "tokens" : [ 400 ], "start" : 0.32, "end" : 0.64, "probability" : 0.87 },
        { "word" : " so,", "tokens" : [ 370, 11 ], "start" : 0.64, "end" : 1.1, "probability" : 0.93 },
        { "word" : " my", "tokens" : [ 452 ], "start" : 1.1, "end" : 1.36, "probability" : 0.99 },
        { "word" : " fellow", "tokens" : [ 7177 ], "start" : 1.36, "end" : 1.74, "probability" : 0.98 },
        { "word" : " Americans.", "tokens" : [ 6280, 13 ], "start" : 1.74, "end" : 2.68, "probability" : 0.95 }
      ]"""
WORDS_1 = """[
        { "word" : " Ask", "tokens" : [ 12320 ], "start" : 29.2, "end" : 29.58, "probability" : 0.91 },
        { "word" : " not.", "tokens" : [ 406, 13 ], "start" : 29.58, "end" : 30.06, "probability" : 0.96 }
      ]"""
WORDS_2 = "[\n\n      ]"


def segment(index: int, seek: int, start: str, end: str, text: str, tokens: list[int], words: str | None) -> str:
    log_probs = ", ".join(f'{{ "{token}" : -0.125 }}' for token in tokens)
    words_field = "" if words is None else f',\n      "words" : {words}'
    return f"""{{
      "id" : {index},
      "seek" : {seek},
      "start" : {start},
      "end" : {end},
      "text" : {json.dumps(text)},
      "tokens" : [ {", ".join(map(str, tokens))} ],
      "tokenLogProbs" : [ {log_probs} ],
      "temperature" : 0,
      "avgLogprob" : -0.21,
      "compressionRatio" : 1.4,
      "noSpeechProb" : 0.01{words_field}
    }}"""


def report_json(with_words: bool) -> str:
    """One clip's report as WriteJSON writes it: a TranscriptionResult (no ``seekTime``: nil)."""
    words = (WORDS_0, WORDS_1, WORDS_2) if with_words else (None, None, None)
    segments = [
        segment(0, 0, "0.32", "2.68", " And so, my fellow Americans.", [400, 370, 11, 452, 7177, 6280, 13], words[0]),
        segment(1, 463040, "29.2", "30.06", " Ask not.", [12320, 406, 13], words[1]),
        segment(2, 560000, "35.0", "35.5", "", [], words[2]),
    ]
    joined = ",\n    ".join(segments)
    return f"""{{
  "text" : "And so, my fellow Americans. Ask not.",
  "segments" : [
    {joined}
  ],
  "language" : "en",
  "timings" : {TIMINGS}
}}"""


def write_report(directory: Path, stem: str, with_words: bool) -> Path:
    path = directory / f"{stem}.json"
    path.write_text(report_json(with_words), encoding="utf-8")
    return path


def test_the_report_gives_segments_words_and_seams_as_whisperkit_wrote_them(tmp_path):
    write_report(tmp_path, "clip0000", with_words=True)
    raw = json.loads((tmp_path / "clip0000.json").read_text())
    got = transcript_from_report(read_report(str(tmp_path), "clip0000"), word_timing=True, long_form=True)
    # independent: the same fields by plain dict access
    assert [(s.start, s.end, s.text) for s in got.segments] == [
        (s["start"], s["end"], s["text"]) for s in raw["segments"]
    ]
    assert got.words is not None
    assert [(w.word, w.start, w.end) for w in got.words] == [
        (w["word"].strip(), w["start"], w["end"]) for s in raw["segments"] for w in s["words"]
    ]
    # known answers: 7 words, the first and the last; the seam where the second window (seek 463040) starts, and
    # none for the third (seek 560000), which produced no text
    assert len(got.words) == 7 and (got.words[0].word, got.words[0].start, got.words[0].end) == ("And", 0.32, 0.64)
    assert (got.words[-1].word, got.words[-1].start, got.words[-1].end) == ("not.", 29.58, 30.06)
    seams = sorted({s["seek"] for s in raw["segments"] if s["text"].strip()})[1:]
    assert got.extra == {"seams_s": [seek / 16000 for seek in seams], "seams_from": "decoder windows"}
    assert got.extra["seams_s"] == [28.94]
    assert got.text == "And so, my fellow Americans. Ask not." and got.language == "en"
    assert got.timings["fullPipeline"] == 1.5 and got.timings["totalDecodingLoops"] == 61.0
    starts = [w.start for w in got.words]
    assert starts == sorted(starts) and all(w.start <= w.end for w in got.words)


def test_a_report_without_words_gives_none_never_zeros(tmp_path):
    write_report(tmp_path, "clip0000", with_words=False)
    report = read_report(str(tmp_path), "clip0000")
    assert all("words" not in s for s in report["segments"])  # Swift leaves a nil optional out
    asked = transcript_from_report(report, word_timing=True, long_form=False)
    assert asked.words is None and len(asked.segments) == 3 and asked.extra == {}  # short-form: no seams
    write_report(tmp_path, "clip0001", with_words=True)
    not_asked = transcript_from_report(read_report(str(tmp_path), "clip0001"), word_timing=False, long_form=False)
    assert not_asked.words is None
    no_seek = json.loads(report_json(with_words=False))
    for s in no_seek["segments"]:
        del s["seek"]
    assert transcript_from_report(no_seek, word_timing=False, long_form=True).extra == {}  # not told: no seams


def test_the_command_asks_for_word_timestamps_only_when_the_run_does():
    def command(decoding: DecodingOptions) -> list[str]:
        return whisperkit_command(
            "whisperkit-cli",
            ["/a/x.wav"],
            "/r",
            "tiny.en",
            "",
            decoding,
            long_form=True,
            encoder_units="all",
            decoder_units="all",
        )

    assert "--word-timestamps" in command(DecodingOptions(word_timestamps=True))
    assert "--word-timestamps" not in command(DecodingOptions())
    assert "--skip-special-tokens" in command(DecodingOptions()) and "--report" in command(DecodingOptions())


FAKE_CLI = """#!{python}
# stands in for whisperkit-cli: copies the test's report for each --audio-path, the one with words only under
# --word-timestamps (WhisperKit leaves segment words nil otherwise)
import shutil, sys
from pathlib import Path
args = sys.argv[1:]
report_dir = Path(args[args.index("--report-path") + 1])
source = {with_words!r} if "--word-timestamps" in args else {without_words!r}
for index, arg in enumerate(args):
    if arg == "--audio-path":
        shutil.copy(source, report_dir / (Path(args[index + 1]).stem + ".json"))
"""


@pytest.mark.parametrize("word_timing", [True, False])
def test_the_adapter_stores_what_the_cli_reported(tmp_path, word_timing):
    pytest.importorskip("soundfile", reason="soundfile not installed: pip install soundfile")
    with_words, without_words = write_report(tmp_path, "with", True), write_report(tmp_path, "without", False)
    cli = tmp_path / "whisperkit-cli"
    cli.write_text(FAKE_CLI.format(python=sys.executable, with_words=str(with_words), without_words=str(without_words)))
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    adapter = WhisperKitAdapter("tiny.en", DecodingOptions(word_timestamps=word_timing))
    adapter.cli = str(cli)  # load() would refuse off macOS
    examples = [Example(f"e{i}", "", "") for i in range(2)]
    got = adapter.transcribe_batch([np.zeros(16000, np.float32)] * 2, examples, timestamps=True)
    assert len(got) == 2 and [len(t.segments) for t in got] == [3, 3]
    assert all((t.words is not None) == word_timing for t in got)
    if word_timing:
        assert got[0].words is not None and [w.word for w in got[0].words][:2] == ["And", "so,"]
    assert got[1].extra["seams_s"] == [28.94]
