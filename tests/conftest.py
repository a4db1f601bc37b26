"""Shared fixtures: bundled data, ../shared/data when present, small manifests written on the fly."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUNDLED = REPO / "datasets" / "tiny"
SHARED_DATA = Path(os.environ.get("WHISPERBENCH_SHARED_DATA", REPO.parent / "shared" / "data"))


LONG_TESTS_ENV = "WHISPERBENCH_LONG_TESTS"


def pytest_collection_modifyitems(config, items):
    """Tests marked ``long_running`` (tens of minutes on 2 CPU cores) run only when asked for."""
    if os.environ.get(LONG_TESTS_ENV) == "1":
        return
    skip = pytest.mark.skip(reason=f"runs for tens of minutes on a 2-core CPU; set {LONG_TESTS_ENV}=1 to run it")
    for item in items:
        if "long_running" in item.keywords:
            item.add_marker(skip)


def shared_manifest(subset: str) -> Path:
    """A manifest of ../shared/data, or a skip saying why it is absent."""
    path = SHARED_DATA / subset / "manifest.jsonl"
    if not path.exists():
        pytest.skip(f"shared evaluation data not found at {path} (set WHISPERBENCH_SHARED_DATA)")
    return path


def read_manifest_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Converted weights go to one cache per test session, not the user's cache."""
    monkeypatch.setenv("WHISPERBENCH_CACHE", os.environ.get("WHISPERBENCH_TEST_CACHE")
                       or str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture
def tiny_short() -> Path:
    return BUNDLED / "shortform" / "manifest.jsonl"


@pytest.fixture
def tiny_long() -> Path:
    return BUNDLED / "longform" / "manifest.jsonl"


@pytest.fixture
def tiny_rows(tiny_short) -> list[dict]:
    return read_manifest_rows(tiny_short)


@pytest.fixture
def local_manifest(tmp_path, tiny_rows):
    """Copy of the bundled short-form set with absolute audio paths, editable per test."""

    def make(rows=None, name="manifest.jsonl"):
        base = BUNDLED / "shortform"
        rows = [dict(r, audio=str(base / r["audio"])) for r in (rows if rows is not None else tiny_rows)]
        return write_jsonl(tmp_path / name, rows)

    return make


def compare_stored(runs_dir, reference, candidate):
    """The harness's comparison of two finished runs (RunResults) stored under ``runs_dir``."""
    from whisperbench.harness import open_run
    from whisperbench.reports import compare_runs

    return compare_runs(open_run(reference.store.name, runs_dir), open_run(candidate.store.name, runs_dir))


def print_differences(label, comparison, candidate="candidate"):
    """WER, QoI and every example whose text differs from openai-whisper's (shown with pytest -s)."""
    r = comparison.result
    print(f"\n{label}: WER {comparison.candidate_wer:.2f}% vs openai-whisper {comparison.reference_wer:.2f}%, "
          f"QoI {r.qoi:.1f}% ({r.improved} improved, {r.unchanged} unchanged, {r.regressed} regressed)")
    for e in r.examples:
        if e.candidate_hypothesis != e.reference_hypothesis:
            print(f"  {e.id} errors {e.reference_errors} -> {e.candidate_errors}\n"
                  f"    openai-whisper: {e.reference_hypothesis}\n    {candidate + ':':<16}{e.candidate_hypothesis}")
