"""A QA file with other column names: TSV manifests, --audio-column & co, and one error when columns do not fit."""

import json

import pytest

import whisperbench as wb
from whisperbench.cli import main
from whisperbench.datasets import load_dataset
from whisperbench.datasets.columns import guess_column
from whisperbench.errors import DatasetError
from whisperbench.types import ColumnMap

from .conftest import BUNDLED

RECORDED = BUNDLED / "recorded" / "openai-whisper-base.jsonl"


def _write(path, header, rows, sep="\t"):
    path.write_text(sep.join(header) + "\n" + "".join(sep.join(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def qa_tsv(tmp_path, tiny_rows):
    """The bundled clips as a Common-Voice-like TSV with foreign names: wav (relative paths), words, lang code."""
    (tmp_path / "clips").symlink_to(BUNDLED / "shortform" / "audio")
    rows = [["c1", "clips/" + r["audio"].split("/")[-1], r["text"], "2", "en"] for r in tiny_rows]
    return _write(tmp_path / "qa.tsv", ["client_id", "wav", "words", "up_votes", "lang_tag"], rows)


def test_foreign_columns_are_one_error_naming_the_file_the_columns_and_the_options(qa_tsv):
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(qa_tsv))
    text = str(caught.value)
    assert text.count("columns do not fit") == 1 and caught.value.problems == []  # once, not once per row
    assert str(qa_tsv) in text and "columns found: client_id, wav, words, up_votes, lang_tag" in text
    assert "--audio-column wav --text-column words" in text


def test_the_suggestion_covers_ids_and_languages_too_and_following_it_keeps_them(tmp_path, tiny_rows):
    """Columns ``utt, wav, words, spk, lng``: the error suggests the id and language columns as well, so that
    following it keeps the ids (not file names) and the per-language figures."""
    (tmp_path / "clips").symlink_to(BUNDLED / "shortform" / "audio")
    rows = [[f"u{i}", "clips/" + r["audio"].split("/")[-1], r["text"], "s1", "en"] for i, r in enumerate(tiny_rows)]
    path = _write(tmp_path / "qa.tsv", ["utt", "wav", "words", "spk", "lng"], rows)
    with pytest.raises(DatasetError) as caught:
        load_dataset(str(path))
    suggestion = next(line for line in str(caught.value).splitlines() if "map them:" in line)
    assert "--audio-column wav --text-column words --id-column utt --language-column lng" in suggestion
    mapped = ColumnMap(audio="wav", text="words", id="utt", language="lng")
    examples = load_dataset(str(path), columns=mapped).dataset.examples
    assert [e.id for e in examples] == [f"u{i}" for i in range(len(tiny_rows))]
    assert {e.language for e in examples} == {"en"}


def test_only_a_column_of_unique_values_is_suggested_as_the_id(tmp_path, tiny_rows, capsys):
    """Issue 70 item 3: ``clip,utterance,lang,speaker_id`` suggested ``--id-column speaker_id``, and following it
    gave "duplicate id"; a Common Voice TSV's ``client_id`` (one per speaker) was suggested too. A column is
    suggested as the id only when every row has a value and no two the same; else the hint says that the ids then
    come from the file names — and following the hint loads every example."""
    (tmp_path / "clips").symlink_to(BUNDLED / "shortform" / "audio")
    clips = ["clips/" + r["audio"].split("/")[-1] for r in tiny_rows]
    speakers = [["1688", "1688", "1689", "1688", "1689", "1689"][i] for i in range(len(tiny_rows))]
    qa = _write(
        tmp_path / "qa.csv",
        ["clip", "utterance", "lang", "speaker_id"],
        [[c, r["text"].replace(",", ""), "en", s] for c, r, s in zip(clips, tiny_rows, speakers)],
        sep=",",
    )
    voice = _write(  # Common Voice's columns, its clip and text under other names; one client read every clip
        tmp_path / "cv.tsv",
        ["client_id", "clip", "sentence_id", "transcription_text", "locale"],
        [["c0ffee", c, f"s{i % 2}", r["text"], "en"] for i, (c, r) in enumerate(zip(clips, tiny_rows))],
    )
    for path in (qa, voice):
        assert main(["datasets", str(path)]) == 2
        err = capsys.readouterr().err
        hint = next((line for line in err.splitlines() if "map them:" in line), err)
        assert "--id-column" in hint and "the ids come from the audio file names" in hint, hint
        assert not any(f"--id-column {name}" in hint for name in ("speaker_id", "client_id", "sentence_id"))
        options = hint.split("map them: ")[1].split("  (")[0].split()
        assert main(["datasets", str(path), *options]) == 0, options  # following the hint loads every example
        assert "6 valid examples, 0 invalid" in capsys.readouterr().out
    unique = _write(tmp_path / "u.tsv", ["utt", "wav", "words"], [[f"k{i}", c, "a"] for i, c in enumerate(clips)])
    with pytest.raises(DatasetError, match="--id-column utt"):
        load_dataset(str(unique))


def test_mapped_tsv_loads_the_same_examples_as_the_bundled_manifest(qa_tsv):
    mapped = load_dataset(str(qa_tsv), columns=ColumnMap(audio="wav", text="words", language="lang_tag")).dataset
    bundled = load_dataset("tiny-shortform").dataset
    assert mapped.content_hash == bundled.content_hash  # same ids (from the file names), texts and audio bytes
    assert {ex.language for ex in mapped.examples} == {"en"}
    assert mapped.examples[0].extra["client_id"] == "c1" and "words" not in mapped.examples[0].extra


def test_a_mapped_column_that_is_absent_is_named(qa_tsv):
    with pytest.raises(DatasetError, match=r"--text-column 'sentence': no such column") as caught:
        load_dataset(str(qa_tsv), columns={"audio": "wav", "text": "sentence"})
    assert "map them: --text-column words" in str(caught.value)


def test_usual_names_need_no_option_and_csv_takes_id_and_language_columns(tmp_path, tiny_rows):
    audio = BUNDLED / "shortform" / "audio"
    tsv = _write(
        tmp_path / "cv.tsv",
        ["path", "sentence", "locale"],
        [[str(audio / r["audio"].split("/")[-1]), r["text"], "en-US"] for r in tiny_rows],
    )
    assert len(load_dataset(str(tsv)).dataset) == 6
    lines = ["utt,file_path,label,tongue"] + [
        f'u{i},{audio / r["audio"].split("/")[-1]},"{r["text"]}",German' for i, r in enumerate(tiny_rows)
    ]
    (tmp_path / "qa.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ds = wb.load_dataset(
        tmp_path / "qa.csv", columns={"audio": "file_path", "text": "label", "id": "utt", "language": "tongue"}
    )
    assert [ex.id for ex in ds.examples] == [f"u{i}" for i in range(6)] and ds.examples[0].language == "de"


def test_tsv_keeps_quotes_and_refuses_a_csv_in_disguise(tmp_path):
    clip = BUNDLED / "shortform" / "audio" / "jfk.flac"
    tsv = _write(tmp_path / "q.tsv", ["id", "audio", "text"], [["jfk", str(clip), 'he said "ask not" twice']])
    assert load_dataset(str(tsv)).dataset.examples[0].text == 'he said "ask not" twice'
    (tmp_path / "c.tsv").write_text(f"id,audio,text\njfk,{clip},hello\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="a CSV"):
        load_dataset(str(tmp_path / "c.tsv"))
    (tmp_path / "s.csv").write_text(f"id;audio;text\njfk;{clip};hello\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="no comma but ';'"):
        load_dataset(str(tmp_path / "s.csv"))
    _write(tmp_path / "t.csv", ["id", "audio", "text"], [["jfk", str(clip), "hello"]])
    with pytest.raises(DatasetError, match="a TSV. name it .tsv"):
        load_dataset(str(tmp_path / "t.csv"))
    bad = _write(tmp_path / "b.tsv", ["id", "audio", "text"], [["jfk", str(clip), "hello", "extra"]])
    with pytest.raises(DatasetError, match="line 2: 4 tab-separated fields"):
        load_dataset(str(bad))


def test_the_guess_reads_values_and_names():
    rows = [{"a": "x/1.wav", "b": "one two three", "c": "7", "utterance_id": "u1"}]
    assert guess_column("audio", ["c", "b", "a"], rows) == "a"  # by its values
    assert guess_column("text", ["c", "b", "a"], rows) == "b"  # the wordiest column that is not audio
    assert guess_column("id", ["b", "utterance_id"], rows) == "utterance_id"
    assert guess_column("text", ["c"], rows) is None


def test_score_with_columns_records_them_in_run_json_and_scores_as_the_bundled_set(tmp_path, qa_tsv):
    runs = tmp_path / "runs"
    assert (
        main(
            [
                "score",
                "--dataset",
                str(qa_tsv),
                "--hypotheses",
                str(RECORDED),
                "--audio-column",
                "wav",
                "--text-column",
                "words",
                "--runs-dir",
                str(runs),
                "--name",
                "qa",
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "score",
                "--dataset",
                "tiny-shortform",
                "--hypotheses",
                str(RECORDED),
                "--runs-dir",
                str(runs),
                "--name",
                "bundled",
            ]
        )
        == 0
    )
    info = json.loads((runs / "qa" / "run.json").read_text())
    assert info["dataset"]["columns"] == {"audio": "wav", "text": "words"}
    qa, bundled = wb.load_run("qa", runs), wb.load_run("bundled", runs)
    assert qa.meta.dataset.columns == {"audio": "wav", "text": "words"} and bundled.meta.dataset.columns == {}
    assert qa.summary.wer == pytest.approx(bundled.summary.wer) and qa.summary.num_failed == 0


def test_cli_prints_the_one_error_and_exits_2(qa_tsv, capsys):
    assert main(["datasets", str(qa_tsv)]) == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "--audio-column wav --text-column words" in err
    assert main(["datasets", str(qa_tsv), "--audio-column", "wav", "--text-column", "words"]) == 0


def test_evaluate_takes_columns(tmp_path, qa_tsv):
    run = wb.evaluate(
        "recorded",
        str(RECORDED),
        qa_tsv,
        runs_dir=tmp_path / "runs",
        name="e",
        columns={"audio": "wav", "text": "words"},
    )
    assert run.meta.dataset.columns == {"audio": "wav", "text": "words"} and run.summary.num_failed == 0


def test_hugging_face_dataset_with_foreign_columns(tiny_rows):
    datasets = pytest.importorskip("datasets")
    table = datasets.Dataset.from_dict(
        {
            "speech_file": [str(BUNDLED / "shortform" / r["audio"]) for r in tiny_rows],
            "caption": [r["text"] for r in tiny_rows],
        }
    )
    with pytest.raises(DatasetError, match="--audio-column speech_file --text-column caption"):
        wb.load_dataset(table)
    assert len(wb.load_dataset(table, columns={"audio": "speech_file", "text": "caption"})) == 6
