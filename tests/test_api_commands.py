"""API = CLI for the commands that had no API function (issue 67): `perturb`, `subtitles`, `datasets`,
`adapters` and `models` each call one function of :mod:`whisperbench.api`, and the two give the same result."""

from __future__ import annotations

import json

import pytest

import whisperbench as wb
from whisperbench.cli import main
from whisperbench.errors import WhisperbenchError


def test_perturb_writes_the_same_set_from_the_api_and_the_cli(tmp_path, capsys):
    pytest.importorskip("audiomentations", reason="perturb's signal work: pip install 'whisperbench[robustness]'")
    manifest = wb.perturb("tiny-shortform", tmp_path / "api", gain="-6", limit=1)
    assert (
        main(["perturb", "--dataset", "tiny-shortform", "--gain", "-6", "--limit", "1", "--out", str(tmp_path / "cli")])
        == 0
    )
    printed = capsys.readouterr().out.strip()
    assert printed.endswith(f"{manifest.parent.name}/manifest.jsonl")  # the same recipe key: the same set
    assert [json.loads(line)["id"] for line in manifest.read_text().splitlines()] == ["jfk~clean", "jfk~gain-6dB"]
    cli_audio = sorted(p.read_bytes() for p in (tmp_path / "cli").rglob("*.*"))
    assert cli_audio and cli_audio == sorted(p.read_bytes() for p in (tmp_path / "api").rglob("*.*"))


def test_datasets_adapters_and_models_print_what_the_api_returns(capsys):
    assert main(["datasets"]) == 0
    listed = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert listed == {name: str(path) for name, path in wb.list_datasets().items()}
    assert main(["adapters", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == wb.list_adapters()
    assert main(["adapters", "recorded", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == wb.list_adapters("recorded")
    assert main(["models", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(wb.list_models()))
    assert main(["models", "formats", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(wb.model_formats()))


def test_check_dataset_names_each_invalid_row_as_the_cli_does(tmp_path, capsys):
    manifest = tmp_path / "m.jsonl"
    manifest.write_text('{"id": "a", "audio": "missing.flac", "text": "x"}\n')
    checked = wb.check_dataset(manifest)
    assert len(checked.dataset) == 0 and len(checked.invalid) == 1
    assert main(["datasets", str(manifest)]) == 1
    assert f"invalid: {checked.invalid[0].reason}" in capsys.readouterr().out


def test_subtitles_of_a_run_without_times_is_one_error(tmp_path):
    run = wb.score(wb.api.RECORDED / "openai-whisper-tiny.en.jsonl", "tiny-shortform", runs_dir=tmp_path, name="t")
    with pytest.raises(WhisperbenchError, match="stored no segment or word times"):
        wb.subtitles(run, tmp_path / "subs")
    assert main(["subtitles", "t", "--runs-dir", str(tmp_path)]) == 2
