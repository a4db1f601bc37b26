"""Bad input matrix: each case gets a clear error naming the example, or an explicit failed example
that the summary counts. Fuzz tests for the manifest loader and the normalizer's callers."""

from __future__ import annotations

import json

import numpy as np
import pytest
import soundfile as sf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from whisperbench.cli import main
from whisperbench.datasets import load_dataset
from whisperbench.datasets.audio import load_audio
from whisperbench.datasets.hypotheses import read_rows
from whisperbench.errors import AudioError, DatasetError, WhisperbenchError
from whisperbench.harness import RunRequest, open_run, run_evaluation

from .conftest import BUNDLED, write_jsonl

JFK = BUNDLED / "shortform" / "audio" / "jfk.flac"


def _row(ex_id, audio, text="hello world"):
    return {"id": ex_id, "audio": str(audio), "text": text}


@pytest.fixture
def samples():
    audio, rate = sf.read(str(JFK), dtype="float32")
    assert rate == 16000
    return audio


@pytest.mark.parametrize("case", ["corrupt", "zero_length", "missing", "empty_text", "duplicate"])
def test_each_bad_example_is_named_or_counted(case, tmp_path):
    bad = tmp_path / "bad.flac"
    if case == "corrupt":
        bad.write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunkjunk")
    elif case == "zero_length":
        sf.write(str(bad), np.zeros(0, dtype=np.float32), 16000)
    rows = [
        _row("good", JFK),
        _row(
            "bad", bad if case != "missing" else tmp_path / "nope.flac", "  " if case == "empty_text" else "hello world"
        ),
    ]
    if case == "duplicate":
        rows[1] = _row("good", JFK)
    manifest = write_jsonl(tmp_path / "m.jsonl", rows)
    with pytest.raises(DatasetError) as info:
        load_dataset(str(manifest))
    named = "good" if case == "duplicate" else "bad"
    assert f"id {named}" in str(info.value) or f"id {named!r}" in str(info.value)
    assert str(manifest) in str(info.value) or case == "duplicate"
    hyp = write_jsonl(tmp_path / "h.jsonl", [{"id": "good", "hypothesis": "hello"}, {"id": "bad", "hypothesis": "x"}])
    result = run_evaluation(
        RunRequest("recorded", str(hyp), str(manifest), runs_dir=str(tmp_path / "r"), skip_invalid=True)
    )
    assert result.summary.num_failed >= 1
    assert result.summary.num_examples == (1 if case == "duplicate" else 2)


def test_wrong_sample_rate_stereo_and_8_bit_are_converted(tmp_path, samples):
    stereo_8k = np.stack([samples[::2], samples[::2]], axis=1)
    sf.write(str(tmp_path / "a.wav"), stereo_8k, 8000, subtype="PCM_U8")
    sf.write(str(tmp_path / "b.flac"), samples, 16000, subtype="PCM_16")
    converted, reference = load_audio(str(tmp_path / "a.wav")), load_audio(str(tmp_path / "b.flac"))
    assert converted.dtype == np.float32 and abs(len(converted) - len(reference)) <= 2
    n = min(len(converted), len(reference))
    assert np.corrcoef(converted[:n], reference[:n])[0, 1] > 0.9  # same speech after 8-bit + resampling


def test_undecodable_audio_at_inference_is_a_failed_example(tmp_path):
    with pytest.raises(AudioError, match="cannot decode audio"):
        load_audio(b"not audio at all")


def test_empty_and_punctuation_only_references_are_scored_by_rule(tmp_path):
    # "!!! --" normalizes to nothing (note: Whisper's English normalizer keeps a lone "." from "...")
    rows = [_row("punct", JFK, "!!! --"), _row("ok", JFK, "hello world")]
    manifest = write_jsonl(tmp_path / "m.jsonl", rows)
    hyp = write_jsonl(
        tmp_path / "h.jsonl", [{"id": "punct", "hypothesis": "so there"}, {"id": "ok", "hypothesis": "hello world"}]
    )
    result = run_evaluation(RunRequest("recorded", str(hyp), str(manifest), runs_dir=str(tmp_path / "r")))
    s = result.summary
    assert s.empty_transcripts == 1 and s.insertions == 2 and s.transcript_words == 2
    assert s.wer == pytest.approx(100.0)  # 2 insertions over 2 reference words
    punct = next(p for p in open_run(result.store.name, tmp_path / "r").scored() if p.id == "punct")
    assert punct.wer is None and punct.scored().words.insertions == 2


def test_non_utf8_and_quoted_newline_csv(tmp_path):
    (tmp_path / "latin.csv").write_bytes(f"id,audio,text\na,{JFK},caf\xe9\n".encode("latin-1"))
    with pytest.raises(DatasetError, match="latin.csv: not valid UTF-8 at line 2"):
        load_dataset(str(tmp_path / "latin.csv"))
    (tmp_path / "q.csv").write_text(f'id,audio,text\na,{JFK},"line one\nline two, with comma"\n', encoding="utf-8")
    assert load_dataset(str(tmp_path / "q.csv")).dataset.examples[0].text == "line one\nline two, with comma"


def test_hypotheses_file_problems(tmp_path, tiny_short, capsys):
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a", "hypothesis": "x"}\n{"id": "a", "hypothesis": "y"}\n', encoding="utf-8")
    with pytest.raises(WhisperbenchError, match="dup.jsonl line 2: duplicate id 'a'"):
        read_rows(str(dup))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"hypothesis": "no id"}\n', encoding="utf-8")
    assert (
        main(
            [
                "score",
                "--dataset",
                str(tiny_short),
                "--hypotheses",
                str(bad),
                "--name",
                "b",
                "--runs-dir",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    assert "bad.jsonl line 1" in capsys.readouterr().err


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.fixed_dictionaries({"id": _text, "text": _text}), max_size=6), junk=st.binary(max_size=40))
def test_manifest_loader_fuzz_only_raises_dataset_errors(tmp_path, rows, junk):
    """Any manifest either loads or raises DatasetError (never another exception)."""
    path = tmp_path / "fuzz.jsonl"
    lines = [json.dumps(dict(r, audio=str(JFK))) for r in rows]
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8") + junk)
    try:
        checked = load_dataset(str(path), skip_invalid=True)
    except DatasetError:
        return
    ids = [ex.id for ex in checked.dataset.examples]
    assert len(ids) == len(set(ids))
    assert all(ex.text.strip() for ex in checked.dataset.examples)


def test_invalid_examples_are_counted_as_invalid_not_resumed(tmp_path, capsys):
    """With --skip-invalid a row whose audio is missing is stored as failed by this invocation: "1 invalid", never
    "resumed"; run again, it is resumed like any stored result."""
    from whisperbench.cli import main

    from .conftest import BUNDLED, read_manifest_rows, write_jsonl

    rows = [
        dict(r, audio=str(BUNDLED / "shortform" / r["audio"]))
        for r in read_manifest_rows(BUNDLED / "shortform" / "manifest.jsonl")
    ]
    rows[0] = dict(rows[0], audio=str(tmp_path / "gone.flac"))
    manifest = write_jsonl(tmp_path / "m.jsonl", rows)
    args = [
        "score",
        "--dataset",
        str(manifest),
        "--hypotheses",
        str(BUNDLED / "recorded" / "openai-whisper-base.jsonl"),
        "--name",
        "r",
        "--runs-dir",
        str(tmp_path / "runs"),
        "--skip-invalid",
    ]
    capsys.readouterr()
    assert main(args) == 0
    assert "(5 computed, 0 resumed, 1 invalid), 1 failed" in capsys.readouterr().out
    assert main(args) == 0  # an invalid example is tried again (a failure is), and is invalid again
    second = capsys.readouterr()
    assert "(0 computed, 5 resumed, 1 invalid), 1 failed" in second.out and "stopped at" not in second.err


def test_a_refused_model_leaves_no_empty_run_folder(tmp_path):
    """A model refused when the run starts (a folder holding no Whisper model) is an error naming it; the run folder
    this invocation made is removed again, not left behind empty."""
    from whisperbench.cli import main

    (tmp_path / "empty").mkdir()
    runs = tmp_path / "runs"
    args = ["run", "--adapter", "openai-whisper", "--model", str(tmp_path / "empty"), "--dataset", "tiny-shortform"]
    assert main(args + ["--runs-dir", str(runs)]) == 2
    assert not runs.exists() or not any(runs.iterdir())
