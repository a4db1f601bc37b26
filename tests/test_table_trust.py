"""A score table is never stale and never trusted on its checksum alone (issue 67 item 3, issue 69 item 4): it
records the version of each metric's code (the digest of the module defining it, a plug-in's distribution and
version) and the content hash of predictions.jsonl, and the gate scores a random sample of the stored lines again
and compares them with the table's rows."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import BUNDLED, REPO

MANIFEST = BUNDLED / "shortform" / "manifest.jsonl"
RECORDED = BUNDLED / "recorded"


def _cli(args: list[str], cwd: Path, src: Path = REPO / "src", extra: str = "") -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (extra, str(src)) if p))
    return subprocess.run(
        [sys.executable, "-m", "whisperbench", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300
    )


def _score(runs: Path, cwd: Path, src: Path = REPO / "src", extra: str = "") -> None:
    for name, file in (("ref", "openai-whisper-base.jsonl"), ("cand", "openai-whisper-tiny.en.jsonl")):
        args = ["score", "--dataset", str(MANIFEST), "--hypotheses", str(RECORDED / file), "--name", name]
        done = _cli([*args, "--runs-dir", str(runs)], cwd, src, extra)
        assert done.returncode == 0, done.stderr


def _compared(runs: Path, cwd: Path, src: Path = REPO / "src", extra: str = "") -> dict:
    done = _cli(
        ["compare", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--json"], cwd, src, extra
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)[0]


def test_an_in_tree_metric_whose_kernel_changed_shows_its_new_value(tmp_path):
    """The kernel of the built-in CER metric made to count every character error ten times, in a copy of the
    source: the next ``compare`` shows ten times the errors (before: the table was served stale, since
    character_error_rate.py was in no fixed list of scorer modules)."""
    runs = tmp_path / "runs"
    _score(runs, tmp_path)
    before = _compared(runs, tmp_path)["metrics"]["cer"]["candidate"]
    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "whisperbench", src / "whisperbench", ignore=shutil.ignore_patterns("__pycache__"))
    module = src / "whisperbench" / "scoring" / "character_error_rate.py"
    code = module.read_text(encoding="utf-8")
    assert code.count('"char_errors": float(') == 1, "the CER kernel changed: update this test"
    module.write_text(code.replace('"char_errors": float(', '"char_errors": 10 * float('), encoding="utf-8")
    after = _compared(runs, tmp_path, src)["metrics"]["cer"]["candidate"]
    assert before["char_errors"] > 0 and after["char_errors"] == 10 * before["char_errors"]


PLUGIN = """
from whisperbench.scoring.metrics import Metric
METRIC = Metric("letters", "letters", per_example=lambda e: {"n": FACTOR * float(len(e.hypothesis))}, aggregate="sum")
"""


def test_a_plugin_whose_kernel_changed_shows_its_new_value(tmp_path):
    """The same for a plug-in whose distribution version stays 1.0: its module's digest tells."""
    site = tmp_path / "site"
    dist = site / "letters_metric-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: letters-metric\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text("[whisperbench.metrics]\nletters = letters_metric:METRIC\n")
    (site / "letters_metric.py").write_text("FACTOR = 1\n" + PLUGIN, encoding="utf-8")
    runs = tmp_path / "runs"
    _score(runs, tmp_path, extra=str(site))
    before = _compared(runs, tmp_path, extra=str(site))["metrics"]["letters"]["candidate"]["n"]
    (site / "letters_metric.py").write_text("FACTOR = 3\n" + PLUGIN, encoding="utf-8")
    after = _compared(runs, tmp_path, extra=str(site))["metrics"]["letters"]["candidate"]["n"]
    assert before > 0 and after == 3 * before


def _forge(run: Path) -> None:
    """Rewrite the run's score table as if it had no error at all, and its check to match (no key needed)."""
    import pyarrow as pa

    from whisperbench.core.hashing import sha256_of
    from whisperbench.store.score_files import check_path

    path = run / "scores-english.arrow"
    table = pa.ipc.open_file(pa.py_buffer(path.read_bytes())).read_all()  # not mapped: the file is rewritten
    columns = {name: table[name] for name in table.column_names}
    for name in ("substitutions", "deletions", "insertions", "char_substitutions", "char_deletions", "char_insertions"):
        columns[name] = pa.array([0] * table.num_rows, pa.int64())
    columns["hits"] = table["hits"]  # the transcript's words stay what they are
    columns["hypothesis_norm"] = table["hypothesis_norm"]
    forged = pa.table(columns, schema=table.schema)
    for name in ("wer.word_errors", "cer.char_errors"):
        forged = forged.set_column(forged.column_names.index(name), name, pa.array([0.0] * table.num_rows))
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, forged.schema) as writer:
        writer.write_table(forged)
    check = json.loads(check_path(path).read_text(encoding="utf-8"))
    check_path(path).write_text(json.dumps(check | {"sha256": sha256_of(path)}), encoding="utf-8")


def test_a_forged_table_with_its_check_recomputed_cannot_flip_the_gate(tmp_path):
    runs = tmp_path / "runs"
    _score(runs, tmp_path)
    gate = ["gate", "--reference", "ref", "--candidate", "cand", "--runs-dir", str(runs), "--max-wer-increase", "0"]
    honest = _cli(gate, tmp_path)
    assert honest.returncode == 1, honest.stdout + honest.stderr
    _forge(runs / "cand")
    compared = _compared(runs, tmp_path)  # compare (no verdict) trusts the checksum: the forgery took
    assert compared["metrics"]["wer"]["candidate"]["wer"] == 0.0
    forged = _cli(gate, tmp_path)
    assert forged.returncode == 1, forged.stdout + forged.stderr  # the verdict is the predictions'
    assert "not its predictions'" in forged.stderr and "cand" in forged.stderr


def test_an_edit_that_keeps_size_and_mtime_is_not_served_from_the_table(tmp_path):
    """predictions.jsonl edited in place (one hypothesis's letters changed, same length) and its modification
    time set back: the table is rebuilt, the figures are the new text's."""
    runs = tmp_path / "runs"
    _score(runs, tmp_path)
    before = _compared(runs, tmp_path)["metrics"]["wer"]["candidate"]["wer"]
    path = runs / "cand" / "predictions.jsonl"
    stat = path.stat()
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[0])
    row["hypothesis"] = "".join("x" if c.isalpha() else c for c in row["hypothesis"])
    lines[0] = json.dumps(row) + "\n"
    data = "".join(lines)
    assert len(data.encode()) == stat.st_size
    time.sleep(0.01)
    path.write_text(data, encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    assert _compared(runs, tmp_path)["metrics"]["wer"]["candidate"]["wer"] > before


def test_a_copied_run_keeps_its_table(tmp_path):
    """A copied folder changes predictions.jsonl's change time, not its content: the table is used as it is (the
    content hash matches) and its check records the new stamp."""
    from whisperbench import load_run
    from whisperbench.store.score_files import check_path

    runs = tmp_path / "runs"
    _score(runs, tmp_path)
    shutil.copytree(runs / "cand", tmp_path / "copy" / "cand")
    table = tmp_path / "copy" / "cand" / "scores-english.arrow"
    written = table.stat().st_mtime_ns
    stamp = json.loads(check_path(table).read_text(encoding="utf-8"))["predictions"]
    run = load_run(tmp_path / "copy" / "cand")
    assert run.score_table().num_rows == 6 and table.stat().st_mtime_ns == written  # not rebuilt
    assert json.loads(check_path(table).read_text(encoding="utf-8"))["predictions"] != stamp


@pytest.mark.parametrize("count", [3, 64])
def test_a_sample_of_a_large_file_is_read_without_reading_it_whole(tmp_path, count):
    import random

    from whisperbench.store.runs import RunStore

    store = RunStore(tmp_path / "r")
    store.path.mkdir()
    rows = [{"id": f"e{i}", "transcript": "a b", "hypothesis": "a b " * (i % 7)} for i in range(5000)]
    store.predictions_path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    picked = store.sample_predictions(count, random.Random(1))
    assert 0 < len(picked) <= count and all(p.id.startswith("e") for p in picked)
    assert len({p.id for p in store.sample_predictions(64, random.Random(2))}) > 48  # spread over the file


@pytest.fixture
def letters_site(tmp_path, monkeypatch):
    """The ``letters`` plug-in (:data:`PLUGIN`, FACTOR 1) on sys.path as an installed distribution, in this process;
    ``install(factor)`` rewrites its module and loads the registry again (its kernel edited, its version kept)."""
    from whisperbench.scoring.metrics import METRICS

    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))

    def install(factor: int) -> None:
        dist = site / "letters_metric-1.0.dist-info"
        dist.mkdir(exist_ok=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: letters-metric\nVersion: 1.0\n", encoding="utf-8")
        (dist / "entry_points.txt").write_text("[whisperbench.metrics]\nletters = letters_metric:METRIC\n")
        (site / "letters_metric.py").write_text(f"FACTOR = {factor}\n" + PLUGIN, encoding="utf-8")
        sys.modules.pop("letters_metric", None)
        METRICS.reload()

    yield install
    sys.modules.pop("letters_metric", None)
    METRICS.reload()


def _computed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the metrics whose columns are computed from now on, in order (a spy on
    ``Metric.kernel_columns``, which every path that computes a metric's columns takes)."""
    from whisperbench.scoring.metrics import Metric

    names: list[str] = []
    original = Metric.kernel_columns

    def spy(self, examples, failures):
        names.append(self.name)
        return original(self, examples, failures)

    monkeypatch.setattr(Metric, "kernel_columns", spy)
    return names


def _scored_pair(tmp_path: Path) -> Path:
    from whisperbench import score

    runs = tmp_path / "runs"
    for name, file in (("ref", "openai-whisper-base.jsonl"), ("cand", "openai-whisper-tiny.en.jsonl")):
        score(RECORDED / file, MANIFEST, runs_dir=runs, name=name)
    return runs


def _recorded_versions(run: Path) -> dict:
    from whisperbench.store.score_files import check_path

    return json.loads(json.loads(check_path(run / "scores-english.arrow").read_text(encoding="utf-8"))["metrics"])


def test_a_metric_whose_kernel_changed_is_the_only_one_computed_again(tmp_path, letters_site, monkeypatch):
    """The plug-in's kernel edited after the runs were scored (its distribution still 1.0): the next read computes
    its columns only — no other metric's, no alignment — records its new version, and gives the table a whole
    rebuild gives, cell for cell; ``compare --json`` shows the new value."""
    from whisperbench import load_run
    from whisperbench.reports import compare_runs
    from whisperbench.scoring.metrics import metric_named

    letters_site(1)
    runs = _scored_pair(tmp_path)
    before = compare_runs(load_run(runs / "ref"), load_run(runs / "cand")).to_json()["metrics"]["letters"]
    old_version = _recorded_versions(runs / "cand")["letters"]
    letters_site(3)
    assert metric_named("letters").code_version != old_version
    with monkeypatch.context() as patched:
        computed = _computed(patched)
        patched.setattr("whisperbench.scoring.engine.align", None)  # nothing is aligned again
        after = compare_runs(load_run(runs / "ref"), load_run(runs / "cand")).to_json()["metrics"]["letters"]
    assert computed == ["letters", "letters"]  # once per run, and no other metric
    assert before["candidate"]["n"] > 0 and after["candidate"]["n"] == 3 * before["candidate"]["n"]
    versions = _recorded_versions(runs / "cand")
    assert versions["letters"] == metric_named("letters").code_version != old_version
    assert {k: v for k, v in versions.items() if k != "letters"} == {
        k: v for k, v in _recorded_versions(runs / "ref").items() if k != "letters"
    }
    updated = load_run(runs / "cand").score_table()
    (runs / "cand" / "scores-english.arrow").unlink()
    rebuilt = load_run(runs / "cand").score_table()
    assert updated.column_names == rebuilt.column_names
    assert updated.equals(rebuilt)


def test_a_metric_installed_after_the_run_is_computed_on_its_own(tmp_path, letters_site, monkeypatch):
    """Runs scored without the plug-in: the first read after it is installed computes its columns only, and
    ``compare`` shows it as it would for runs scored with it."""
    from whisperbench import load_run
    from whisperbench.reports import compare_runs

    runs = _scored_pair(tmp_path)
    assert "letters" not in _recorded_versions(runs / "cand")
    letters_site(1)
    with monkeypatch.context() as patched:
        computed = _computed(patched)
        late = compare_runs(load_run(runs / "ref"), load_run(runs / "cand")).to_json()["metrics"]
    assert computed == ["letters", "letters"]
    assert "letters" in _recorded_versions(runs / "cand")
    fresh = _scored_pair(tmp_path / "fresh")
    assert late == compare_runs(load_run(fresh / "ref"), load_run(fresh / "cand")).to_json()["metrics"]
    assert late["letters"]["candidate"]["n"] > 0
