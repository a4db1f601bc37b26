"""The cold path a CI job runs: audio facts computed once per distinct file (and reused by the next command),
predictions made durable in groups rather than one fsync a line, the dataset of `score` read once."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import python_probe


@pytest.fixture
def one_file_manifest(tmp_path, tiny_rows):
    from tests.conftest import BUNDLED

    audio = str(BUNDLED / "shortform" / tiny_rows[1]["audio"])
    rows = [{"id": f"u{i}", "audio": audio, "text": tiny_rows[1]["text"]} for i in range(2000)]
    path = tmp_path / "manifest.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path, rows


def test_many_files_not_cached_yet_are_read_on_every_core_and_cached_at_once(tmp_path, tiny_rows, monkeypatch):
    """A fresh runner's cache and 600 distinct files (links to the bundled clips, one of them no audio at all): the
    facts computed in worker processes are each file's own (soundfile and hashlib asked directly), the bad file is
    one invalid example named with its reason, and every good file is cached for the next command."""
    import hashlib
    import sqlite3

    import soundfile

    from tests.conftest import BUNDLED
    from whisperbench.datasets import audio_facts as facts_module
    from whisperbench.datasets import load_dataset

    monkeypatch.setenv("WHISPERBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(facts_module, "_memo", {})
    monkeypatch.setattr(facts_module, "_connection", None)
    monkeypatch.setattr(facts_module, "POOL_MIN", 500)  # a pool for 600 files (5,000 by default)
    clips = [BUNDLED / "shortform" / row["audio"] for row in tiny_rows]
    rows = []
    for i in range(facts_module.POOL_MIN + 100):
        link = tmp_path / f"clip{i}.flac"
        link.symlink_to(clips[i % len(clips)])
        rows.append({"id": f"u{i}", "audio": str(link), "text": "words"})
    (tmp_path / "clip7.flac").unlink()
    (tmp_path / "clip7.flac").write_text("not audio", encoding="utf-8")
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    checked = load_dataset(str(manifest), skip_invalid=True)
    assert [bad.id for bad in checked.invalid] == ["u7"] and "unreadable audio" in checked.invalid[0].reason
    for example in checked.dataset.examples[::50]:
        info = soundfile.info(example.audio)
        assert example.duration_s == info.frames / info.samplerate
        with open(example.audio, "rb") as fh:
            assert example.extra["audio_sha256"] == hashlib.sha256(fh.read()).hexdigest()
    with sqlite3.connect(tmp_path / "cache" / "audio-facts.sqlite") as cache:
        assert cache.execute("SELECT COUNT(*) FROM facts").fetchone()[0] == len(rows) - 1
    monkeypatch.setattr(facts_module, "_memo", {})  # the next command: the cache read back, nothing computed
    monkeypatch.setattr(facts_module, "_connection", None)
    # what is computed again gets an error: only the bad file (never cached) may be, or the others turn invalid
    monkeypatch.setattr(facts_module, "map_ranges", lambda fn, paths, *a, **k: [[("no audio",)] * len(paths)])
    again = load_dataset(str(manifest), skip_invalid=True)
    assert again.dataset.content_hash == checked.dataset.content_hash and [b.id for b in again.invalid] == ["u7"]


def test_a_manifest_pointing_at_one_file_opens_and_hashes_it_once(one_file_manifest, monkeypatch, tmp_path):
    from whisperbench.datasets import audio as audio_module
    from whisperbench.datasets import audio_facts as facts_module
    from whisperbench.datasets import load_dataset

    monkeypatch.setenv("WHISPERBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(facts_module, "_memo", {})
    monkeypatch.setattr(facts_module, "_connection", None)
    calls = {"info": 0, "hash": 0}
    real_info, real_hash = audio_module.audio_info, facts_module.sha256_of

    def counted_info(source):
        calls["info"] += 1
        return real_info(source)

    def counted_hash(source):
        calls["hash"] += 1
        return real_hash(source)

    monkeypatch.setattr(audio_module, "audio_info", counted_info)  # what the facts' reader calls
    monkeypatch.setattr(facts_module, "sha256_of", counted_hash)
    from whisperbench.datasets import records

    looked_up = []  # the load asks for a path's facts once (not a stat and a lookup per row, twice)
    monkeypatch.setattr(
        records, "audio_facts", lambda source: looked_up.append(source) or facts_module.audio_facts(source)
    )
    monkeypatch.setattr(  # the load asks for every distinct file at once
        records, "audio_facts_of", lambda paths: looked_up.extend(paths) or facts_module.audio_facts_of(paths)
    )
    path, rows = one_file_manifest
    checked = load_dataset(str(path))
    assert len(checked.dataset) == len(rows) and calls == {"info": 1, "hash": 1}
    assert looked_up == [rows[0]["audio"]]
    digests = {ex.extra["audio_sha256"] for ex in checked.dataset.examples}
    assert digests == {real_hash(rows[0]["audio"])}  # the digest is the file's, computed here
    # another process (a fresh memo) reads the facts from the cache instead of opening the file again
    monkeypatch.setattr(facts_module, "_memo", {})
    load_dataset(str(path))
    assert calls == {"info": 1, "hash": 1}


def test_a_rewritten_file_gets_fresh_facts(tmp_path, tiny_rows, monkeypatch):
    import os
    import shutil

    from tests.conftest import BUNDLED
    from whisperbench.core.hashing import sha256_of
    from whisperbench.datasets.audio_facts import audio_facts

    monkeypatch.setenv("WHISPERBENCH_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "clip.flac"
    shutil.copy(BUNDLED / "shortform" / tiny_rows[0]["audio"], path)
    first = audio_facts(str(path))
    shutil.copy(BUNDLED / "shortform" / tiny_rows[1]["audio"], path)
    os.utime(path, ns=(1, 1))  # another time even on a coarse clock
    second = audio_facts(str(path))
    assert first.sha256 != second.sha256 == sha256_of(path)
    assert second.info.duration_s != first.info.duration_s


def test_predictions_are_synced_in_groups_and_on_close(tmp_path, monkeypatch):
    import os

    from whisperbench.store import runs as store
    from whisperbench.types import Prediction

    synced = []
    monkeypatch.setattr(store.os, "fsync", lambda fd: synced.append(fd))
    monkeypatch.setattr(store, "SYNC_EVERY_S", 3600.0)
    path = tmp_path / "predictions.jsonl"
    with store.PredictionWriter(path) as writer:
        for i in range(store.SYNC_EVERY_LINES * 2 + 5):
            writer.append(Prediction(f"u{i}", "a", "a"))
        assert len(synced) == 2  # one per full group, not one per line
        assert len(path.read_text().splitlines()) == store.SYNC_EVERY_LINES * 2 + 5  # every line already written
    assert len(synced) == 3  # the rest on close
    assert os.path.getsize(path) > 0


def test_recorded_hypotheses_are_written_a_group_at_a_time(one_file_manifest, tmp_path, monkeypatch):
    """`score` writes its lines in groups (one ``write`` call each), every line whole and each example once."""
    import os

    from whisperbench.api import score
    from whisperbench.harness.examples import RECORDED_GROUP
    from whisperbench.store import runs as store

    monkeypatch.setenv("WHISPERBENCH_CACHE", str(tmp_path / "cache"))
    path, rows = one_file_manifest
    hypotheses = tmp_path / "hyps.jsonl"
    hypotheses.write_text("".join(json.dumps({"id": r["id"], "hypothesis": r["text"]}) + "\n" for r in rows))
    writes = []
    real_write = os.write
    monkeypatch.setattr(store.os, "write", lambda fd, data: writes.append(len(data)) or real_write(fd, data))
    result = score(str(hypotheses), str(path), runs_dir=str(tmp_path / "runs"), name="grouped")
    assert len(writes) == -(-len(rows) // RECORDED_GROUP)  # 2,000 lines in 4 writes
    lines = (tmp_path / "runs" / "grouped" / "predictions.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == [r["id"] for r in rows]
    assert result.summary.num_examples == len(rows) and result.summary.wer == 0.0


@pytest.mark.parametrize("command", ["compare", "gate", "report", "export", "runs", "plan", "noise"])
def test_help_of_a_command_that_runs_no_model_imports_no_model_library_nor_the_harness(command):
    probe = (
        "import sys, io, contextlib\n"
        "from whisperbench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main([{command!r}, '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = ('torch', 'ctranslate2', 'whisperbench.harness.runner', 'ray', 'jax', 'mlx', 'transformers',\n"
        "         'pandas', 'scipy', 'pyarrow')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = python_probe(probe)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "", f"{command} --help imported {out.stdout.strip()}"


@pytest.mark.parametrize("pooled", [True, False], ids=["pool", "one-process"])
def test_score_imports_neither_pandas_nor_scipy_and_gives_the_figures_of_one_core(tmp_path, tiny_rows, pooled):
    """`score` builds and reads its table without pandas (pyarrow would import it, 0.2 s, for conversions a score
    table never needs: whisperbench.scoring.arrays) and computes no p-value (scipy.special, 0.1 s), whether the
    set is large enough for the scoring pool or not; its figures are those of the same pairs scored in one
    process."""
    from tests.conftest import BUNDLED
    from whisperbench.scoring.engine import PARALLEL_MIN

    audio = str(BUNDLED / "shortform" / tiny_rows[1]["audio"])
    words = ["alpha", "beta", "gamma", "delta", "echo"]
    count = PARALLEL_MIN if pooled else 40
    rows = [{"id": f"u{i}", "audio": audio, "text": f"{words[i % 5]} {i} {words[i % 3]}"} for i in range(count)]
    manifest, hypotheses = tmp_path / "manifest.jsonl", tmp_path / "hyps.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    edited = [r["text"] if i % 4 else r["text"].replace("a", "o") + " uh" for i, r in enumerate(rows)]
    hyps = [{"id": r["id"], "hypothesis": h} for r, h in zip(rows, edited)]
    hypotheses.write_text("".join(json.dumps(h) + "\n" for h in hyps), encoding="utf-8")
    after = "print('PANDAS', 'pandas' in sys.modules, 'SCIPY', 'scipy' in sys.modules, code, file=sys.stderr)\n"
    pool = ", '--scoring-workers', '2'" if pooled else ""  # a pool even beside a busy test worker
    out = _score_in_a_fresh_interpreter(tmp_path, hypotheses, manifest, after=after, options=pool)
    assert "PANDAS False SCIPY False 0" in out.stderr, out.stderr[-3000:]
    summary = json.loads(out.stdout)
    from whisperbench.scoring.engine import score_texts

    one_core = [score_texts(r["text"], h, None, summary["normalizer"], True).words for r, h in zip(rows, edited)]
    for name in ("hits", "substitutions", "deletions", "insertions"):
        assert summary[name] == sum(getattr(c, name) for c in one_core), name


def _score_in_a_fresh_interpreter(tmp_path, hypotheses, manifest, before: str = "", after: str = "", options=""):
    """``whisperbench score`` of ``hypotheses`` on ``manifest`` by the command line's ``main`` in a fresh
    interpreter (the run ``many`` under tmp_path/runs), ``before`` and ``after`` it lines of Python that print what
    they find to stderr (``code``: its exit code); ``options``: more arguments, as Python list items."""
    probe = (
        "import json, sys\n" + before + "from whisperbench.cli import main\n"
        "sys.argv = ['whisperbench', 'score', '--hypotheses', sys.argv[1], '--dataset', sys.argv[2],\n"
        f"            '--runs-dir', sys.argv[3], '--name', 'many', '--json', '-q'{options}]\n"
        "code = main()\n" + after
    )
    env = {**os.environ, "WHISPERBENCH_CACHE": str(tmp_path / "cache")}
    return python_probe(probe, str(hypotheses), str(manifest), str(tmp_path / "runs"), env=env, timeout=300)


def test_score_killed_with_sigkill_midway_resumes_with_nothing_lost_and_nothing_doubled(tmp_path, tiny_rows):
    """``score`` of 20,000 pairs is killed (SIGKILL) while it writes predictions (no process of it is left), then
    run again: every example is stored once, and the figures are those of one uninterrupted run (checked against
    jiwer-independent counts)."""
    import os

    from tests.conftest import BUNDLED, kill_9_when
    from whisperbench.store.runs import open_run

    audio = str(BUNDLED / "shortform" / tiny_rows[1]["audio"])
    words = tiny_rows[1]["text"].split()
    rows = [{"id": f"u{i:05d}", "audio": audio, "text": " ".join(words[: 3 + i % 10])} for i in range(20_000)]
    manifest = tmp_path / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    hypotheses = tmp_path / "hyps.jsonl"  # every third hypothesis drops its last word
    hypotheses.write_text(
        "".join(
            json.dumps({"id": r["id"], "hypothesis": r["text"].rsplit(" ", 1)[0] if i % 3 == 0 else r["text"]}) + "\n"
            for i, r in enumerate(rows)
        ),
        encoding="utf-8",
    )
    env = dict(os.environ, WHISPERBENCH_CACHE=str(tmp_path / "cache"))

    def command(name: str) -> list[str]:
        return [sys.executable, "-m", "whisperbench", "score", "--dataset", str(manifest), "--hypotheses",
                str(hypotheses), "--runs-dir", str(tmp_path / "runs"), "--name", name, "--json"]  # fmt: skip

    predictions = tmp_path / "runs" / "killed" / "predictions.jsonl"
    kill_9_when(command("killed"), lambda: predictions.exists() and predictions.stat().st_size > 200_000, env=env)
    written = predictions.read_bytes().count(b"\n")
    assert 0 < written < len(rows)
    assert not _left_running(str(hypotheses))  # the helper scoring its pairs ahead died with it

    resumed = subprocess.run(command("killed"), capture_output=True, text=True, env=env, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    ids = [json.loads(line)["id"] for line in predictions.read_text(encoding="utf-8").splitlines()]
    assert len(ids) == len(set(ids)) == len(rows)  # nothing lost, nothing doubled
    summary = json.loads(resumed.stdout)
    deleted = len(range(0, len(rows), 3))  # one deleted word per third example, nothing else wrong
    assert (summary["deletions"], summary["substitutions"], summary["insertions"]) == (deleted, 0, 0)
    assert summary["transcript_words"] == sum(len(r["text"].split()) for r in rows)
    assert summary["num_examples"] == len(rows) and summary["num_failed"] == 0
    assert open_run(str(tmp_path / "runs" / "killed")).score_table().num_rows == len(rows)


def _left_running(marker: str, wait_s: float = 10.0) -> list:
    """The processes whose command line holds ``marker``, once ``wait_s`` has passed while any still does."""
    import time

    import psutil

    def running() -> list:
        return [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]

    deadline = time.monotonic() + wait_s
    while running() and time.monotonic() < deadline:
        time.sleep(0.1)
    return running()


_JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5) | st.integers(-3, 3), inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_JSON_VALUES)
def test_a_line_written_and_read_through_orjson_reads_back_as_json_writes_and_reads_it(value):
    """files.json_line and parse_json (orjson where it reads the same, json elsewhere) against json itself: the same
    value back, NaN and infinities, integers past 64 bits, tuples and integer keys included."""
    import numpy as np

    from whisperbench.core.json_files import json_line, parse_json

    for data in ({"v": value}, {"v": value, "numpy": np.float64(0.25), "when": np.datetime64("2026-11-28")}):
        try:
            expected_text = json.dumps(data, ensure_ascii=False, default=str)
            expected = json.loads(expected_text)
            expected_text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: json writes a str UTF-8 cannot hold; json_line refuses too
            with pytest.raises(UnicodeEncodeError):
                json_line(data)
            continue
        line = json_line(data)
        assert line.endswith(b"\n") and line.count(b"\n") == 1
        assert _same(parse_json(line), expected) and _same(parse_json(expected_text), expected)


def _same(a, b) -> bool:
    """Equal, NaN equal to NaN (json reads both back as float('nan'))."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("command", ["gate", "compare --json"])
def test_gate_and_compare_import_no_pandas(command, recorded_runs):
    """What gate and compare --json compute needs no DataFrame (pandas: 0.2 s): their figures come from the runs'
    Arrow tables."""
    name, *flags = command.split()
    limits = ["--min-qoi", "1", "--max-wer-increase", "100"] if name == "gate" else []
    probe = (
        "import sys, io, contextlib\n"
        "from whisperbench.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    code = main([{name!r}, '--reference', 'ref', '--candidate', 'bad', '--runs-dir', sys.argv[1],\n"
        f"                 *{limits + flags!r}])\n"
        "print(code, 'p' in out.getvalue(),\n"
        "      [m for m in ('pandas', 'statsmodels')\n"
        "       if m in sys.modules])\n"
    )
    out = python_probe(probe, str(recorded_runs))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(" ", 1)[1].strip() == "True []", out.stdout
