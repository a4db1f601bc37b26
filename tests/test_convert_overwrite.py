"""`models convert --overwrite` replaces an existing output (issue 39, item 5); without it the output is refused.
The conversion itself is stubbed: what is tested is where its result goes."""

from __future__ import annotations

import pytest

from whisperbench.cli import main
from whisperbench.errors import ModelError
from whisperbench.models import resolve


@pytest.fixture
def built(tmp_path, monkeypatch):
    """A converted model as the cache would hand it: a file and a folder, selected by format."""
    file = tmp_path / "cache" / "model.bin"
    folder = tmp_path / "cache" / "model-folder"
    folder.mkdir(parents=True)
    file.write_bytes(b"new weights")
    (folder / "model.safetensors").write_bytes(b"new folder weights")
    monkeypatch.setattr(resolve, "converted", lambda model, fmt, variant=None: file if fmt == "ggml" else folder)
    return file, folder


def test_an_existing_output_is_refused_without_overwrite_and_replaced_with_it(tmp_path, built, capsys):
    out = tmp_path / "tiny.bin"
    out.write_bytes(b"old")
    assert main(["models", "convert", "tiny.en", "--to", "ggml", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err and out.read_bytes() == b"old"
    assert main(["models", "convert", "tiny.en", "--to", "ggml", "--out", str(out), "--overwrite"]) == 0
    assert out.read_bytes() == b"new weights"


def test_a_folder_output_is_replaced_whole(tmp_path, built):
    out = tmp_path / "ct2"
    out.mkdir()
    (out / "stale.txt").write_text("left from before")
    resolve.export_model("tiny.en", "ctranslate2", out, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["model.safetensors"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary copies left


def test_the_model_being_converted_is_never_overwritten(tmp_path, built):
    source = tmp_path / "mine.bin"
    source.write_bytes(b"the user's only copy")
    with pytest.raises(ModelError, match="is the model being converted"):
        resolve.export_model(str(source), "ggml", source, overwrite=True)
    assert source.read_bytes() == b"the user's only copy"
