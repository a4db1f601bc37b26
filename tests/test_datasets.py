"""Dataset loading from every supported source, and the errors bad input must produce."""

import shutil

import pytest
import soundfile as sf

from whisperbench.datasets import bundled_datasets, load_dataset
from whisperbench.errors import DatasetError

from .conftest import BUNDLED, shared_manifest, write_jsonl


def test_bundled_sets_are_found_and_have_the_expected_form():
    names = bundled_datasets()
    assert {"tiny-shortform", "tiny-longform"} <= set(names)
    short = load_dataset("tiny-shortform").dataset
    long = load_dataset("tiny-longform").dataset
    assert (len(short), short.form) == (6, "short")
    assert (len(long), long.form) == (1, "long")
    assert long.examples[0].duration_s == pytest.approx(84.1, abs=0.2)


def test_manifest_paths_are_relative_to_the_manifest_and_hash_is_order_independent(tmp_path, tiny_rows):
    shutil.copytree(BUNDLED / "shortform" / "audio", tmp_path / "audio")
    a = load_dataset(str(write_jsonl(tmp_path / "a.jsonl", tiny_rows))).dataset
    b = load_dataset(str(write_jsonl(tmp_path / "b.jsonl", list(reversed(tiny_rows))))).dataset
    assert a.content_hash == b.content_hash == load_dataset("tiny-shortform").dataset.content_hash
    changed = [dict(r) for r in tiny_rows]
    changed[0]["text"] += " extra"
    c = load_dataset(str(write_jsonl(tmp_path / "c.jsonl", changed))).dataset
    assert c.content_hash != a.content_hash


def test_a_jsonl_transcript_holding_a_line_separator_or_a_crlf_ending_loads_whole(tmp_path):
    """JSON writers leave U+2028 / U+0085 unescaped (json.dumps with ensure_ascii=False): the row is one line."""
    import json

    audio = str(BUNDLED / "shortform" / "audio" / "jfk.flac")
    texts = ["ask not\u2028what your country", "and so\x85my fellow", "plain"]
    lines = [json.dumps({"id": f"u{i}", "audio": audio, "text": t}, ensure_ascii=False) for i, t in enumerate(texts)]
    path = tmp_path / "m.jsonl"
    path.write_bytes(("\r\n".join(lines[:2]) + "\n" + lines[2] + "\n").encode("utf-8"))
    dataset = load_dataset(str(path)).dataset
    assert [ex.text for ex in dataset.examples] == texts


def test_csv_manifest_with_quoted_newlines_and_commas(tmp_path, tiny_rows):
    audio = BUNDLED / "shortform" / "audio" / "jfk.flac"
    text = f'id,audio,text\njfk,{audio},"And so, my fellow\nAmericans"\n'
    path = tmp_path / "m.csv"
    path.write_text(text, encoding="utf-8")
    ds = load_dataset(str(path)).dataset
    assert ds.examples[0].text == "And so, my fellow\nAmericans"


def test_audiofolder_metadata_csv(tmp_path, tiny_rows):
    folder = tmp_path / "af"
    shutil.copytree(BUNDLED / "shortform" / "audio", folder)
    lines = ["file_name,transcription"] + [f'{r["audio"].split("/")[-1]},"{r["text"]}"' for r in tiny_rows]
    (folder / "metadata.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    ds = load_dataset(str(folder)).dataset
    assert sorted(ex.id for ex in ds.examples) == sorted(r["id"] for r in tiny_rows)


def _hf_table(tiny_rows, embed=False):
    datasets = pytest.importorskip("datasets")
    base = BUNDLED / "shortform"
    paths = [base / r["audio"] for r in tiny_rows]
    return datasets.Dataset.from_dict(
        {
            "id": [r["id"] for r in tiny_rows],
            "audio": [{"bytes": p.read_bytes(), "path": p.name} for p in paths] if embed else [str(p) for p in paths],
            "text": [r["text"] for r in tiny_rows],
        }
    ).cast_column("audio", datasets.Audio(sampling_rate=16000))


def test_hugging_face_save_to_disk(tmp_path, tiny_rows):
    import datasets

    datasets.DatasetDict({"test": _hf_table(tiny_rows)}).save_to_disk(str(tmp_path / "hf"))
    ds = load_dataset(f"hf:{tmp_path / 'hf'}:test").dataset
    assert len(ds) == 6 and all(isinstance(ex.audio, (bytes, str)) for ex in ds.examples)
    assert ds.content_hash == load_dataset("tiny-shortform").dataset.content_hash


def test_hugging_face_parquet_folder_through_load_dataset(tmp_path, tiny_rows):
    """A parquet folder goes through the real datasets.load_dataset code path (audio embedded as bytes)."""
    table = _hf_table(tiny_rows, embed=True)
    (tmp_path / "pq" / "data").mkdir(parents=True)
    table.to_parquet(str(tmp_path / "pq" / "data" / "test-00000.parquet"))
    ds = load_dataset(f"hf:{tmp_path / 'pq'}:test").dataset
    assert len(ds) == 6
    assert all(isinstance(ex.audio, bytes) for ex in ds.examples)
    assert {ex.id for ex in ds.examples} == {r["id"] for r in tiny_rows}
    assert ds.content_hash == load_dataset("tiny-shortform").dataset.content_hash


def test_bad_hf_spec():
    with pytest.raises(DatasetError, match="hf:NAME"):
        load_dataset("hf:a:b:c:d")


@pytest.fixture
def broken_rows(tmp_path, tiny_rows):
    base = BUNDLED / "shortform"
    corrupt = tmp_path / "corrupt.flac"
    corrupt.write_bytes(b"fLaC" + b"\x00" * 50)
    rows = [dict(r, audio=str(base / r["audio"])) for r in tiny_rows]
    rows[1]["audio"] = str(tmp_path / "missing.flac")
    rows[2]["audio"] = str(corrupt)
    rows[3]["text"] = "   "
    rows.append(dict(rows[0]))  # duplicate id "jfk"
    return rows


def test_invalid_examples_are_all_named_before_inference(tmp_path, broken_rows):
    path = write_jsonl(tmp_path / "broken.jsonl", broken_rows)
    with pytest.raises(DatasetError) as info:
        load_dataset(str(path))
    message = str(info.value)
    for needle in (
        "duplicate id 'jfk'",
        "missing.flac",
        "unreadable audio",
        "empty transcript",
        broken_rows[1]["id"],
        broken_rows[2]["id"],
        broken_rows[3]["id"],
        "--skip-invalid",
    ):
        assert needle in message


def test_skip_invalid_returns_them_for_recording(tmp_path, broken_rows):
    checked = load_dataset(str(write_jsonl(tmp_path / "broken.jsonl", broken_rows)), skip_invalid=True)
    assert len(checked.dataset) == 2
    assert sorted(i.id for i in checked.invalid) == sorted(["jfk"] + [r["id"] for r in broken_rows[1:4]])


def test_non_utf8_manifest_names_file_and_line(tmp_path):
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(
        '{"id": "a", "audio": "x.flac", "text": "ok"}\n{"id": "b", "audio": "y.flac", "text": "caf\xe9"}\n'.encode(
            "latin-1"
        )
    )
    with pytest.raises(DatasetError, match=r"latin1.jsonl: not valid UTF-8 at line 2"):
        load_dataset(str(path))


def test_invalid_json_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"id": "a"}\n{oops\n', encoding="utf-8")
    with pytest.raises(DatasetError, match="bad.jsonl line 2: invalid JSON"):
        load_dataset(str(path))


def test_resampled_and_stereo_audio_loads(tmp_path):
    import numpy as np

    from whisperbench.datasets.audio import load_audio

    mono, rate = sf.read(str(BUNDLED / "shortform" / "audio" / "jfk.flac"), dtype="float32")
    stereo = np.stack([mono, mono], axis=1)
    sf.write(str(tmp_path / "s.wav"), stereo[::2], 8000, subtype="PCM_U8")
    out = load_audio(str(tmp_path / "s.wav"))
    assert out.dtype == np.float32 and abs(len(out) - len(mono)) <= 2
    assert rate == 16000


def test_shared_shortform_loads(tmp_path):
    ds = load_dataset(str(shared_manifest("shortform"))).dataset
    assert len(ds) == 81 and ds.form == "short"
    assert load_dataset(str(shared_manifest("longform"))).dataset.form == "long"
