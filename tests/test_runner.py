"""The runner and run store: summaries, failures, resume, option checks (recorded + fault-injecting adapters)."""

import json

import jiwer
import pytest

from whisperbench.adapters import DecodingOptions, register
from whisperbench.adapters.base import Adapter
from whisperbench.errors import AdapterUnavailable, OptionError, RunStoreError
from whisperbench.harness import RunRequest, open_run, run_evaluation
from whisperbench.scoring import normalize
from whisperbench.store.runs import RunStore
from whisperbench.types import Transcript

from .conftest import write_jsonl


def hypotheses_file(tmp_path, rows, drop=(), edit=None):
    edit = edit or {}
    lines = [{"id": r["id"], "hypothesis": edit.get(r["id"], r["text"])} for r in rows if r["id"] not in drop]
    return write_jsonl(tmp_path / "hyp.jsonl", lines)


CALLS: list[str] = []


@register
class FlakyAdapter(Adapter):
    """Fault injection only: echoes the reference, raises for ids listed in the model string."""

    name = "test-flaky"
    options = {"fail": ""}
    uses_weights = False

    def load(self):
        pass

    def transcribe(self, audio, example, *, long_form):
        CALLS.append(example.id)
        if example.id in self.settings["fail"].split("+"):
            raise RuntimeError("injected failure")
        assert audio is not None and audio.dtype.name == "float32"
        return Transcript(text=example.text)


@register
class MissingDependencyAdapter(Adapter):
    name = "test-missing"
    requires = ("surely_not_an_installed_module",)
    extra = "nothing"
    uses_weights = False

    def load(self):
        raise AssertionError("never loaded")

    def transcribe(self, audio, example, *, long_form):
        raise AssertionError("never called")


def test_recorded_run_matches_jiwer_and_writes_the_store(tmp_path, tiny_rows, tiny_short):
    edits = {"jfk": "and so my fellow american ask what your country can do for you ask what you can do for your"}
    hyp = hypotheses_file(tmp_path, tiny_rows, drop={"mfa-mfa_youknow"}, edit=edits)
    result = run_evaluation(
        RunRequest("recorded", str(hyp), str(tiny_short), runs_dir=str(tmp_path / "runs"), name="rec")
    )
    s = result.summary
    assert s.num_examples == 6 and s.num_failed == 1
    refs = [normalize(r["text"]) for r in tiny_rows]
    hyps = [normalize(edits.get(r["id"], r["text"])) if r["id"] != "mfa-mfa_youknow" else "" for r in tiny_rows]
    # the failed example scores as all deletions; jiwer needs a word there, and one stand-in word
    # against n reference words costs 1 substitution + (n - 1) deletions: the same error count
    hyps = [h or "<nothing>" for h in hyps]
    out = jiwer.process_words(refs, hyps)
    expected_errors = out.substitutions + out.deletions + out.insertions
    assert s.substitutions + s.deletions + s.insertions == expected_errors
    assert s.wer == pytest.approx(100 * expected_errors / sum(len(r.split()) for r in refs))
    run = open_run("rec", tmp_path / "runs")
    assert {p.id for p in run.predictions} == {r["id"] for r in tiny_rows}
    failed = [p for p in run.predictions if p.status == "error"]
    assert len(failed) == 1 and "mfa-mfa_youknow" in failed[0].error
    info = json.loads((tmp_path / "runs" / "rec" / "run.json").read_text())
    assert info["dataset"]["content_hash"].startswith("sha256:") and info["status"] == "finished"
    assert info["machine"]["cpu_count"] >= 1 and "jiwer" in info["versions"]


def test_resume_skips_finished_ids_and_retries_failed_on_request(tmp_path, local_manifest):
    manifest = local_manifest()
    runs = str(tmp_path / "runs")
    CALLS.clear()
    request = RunRequest(
        "test-flaky",
        "m",
        str(manifest),
        runs_dir=runs,
        name="flaky",
        limit=3,
        warmup=False,
        decoding=DecodingOptions(extra={"fail": "jfk"}),
    )
    first = run_evaluation(request)
    assert first.summary.num_failed == 1 and len(CALLS) == 3
    CALLS.clear()
    request.limit = None
    second = run_evaluation(request)
    assert (second.computed, second.resumed, len(CALLS)) == (3, 3, 3)
    CALLS.clear()
    request.retry_failed = True
    request.decoding = DecodingOptions(extra={"fail": "jfk"})
    third = run_evaluation(request)
    assert CALLS == ["jfk"] and third.summary.num_examples == 6
    lines = (tmp_path / "runs" / "flaky" / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 7  # the retried id appended again; readers keep the last line per id
    assert len(open_run("flaky", runs).predictions) == 6


def test_partial_last_line_is_ignored_and_cut_before_appending(tmp_path, local_manifest):
    manifest = local_manifest()
    request = RunRequest("test-flaky", "m", str(manifest), runs_dir=str(tmp_path / "runs"), name="cut", warmup=False)
    run_evaluation(request)
    path = tmp_path / "runs" / "cut" / "predictions.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:4]) + lines[4][:30])  # as if killed mid-write
    assert len(RunStore(path.parent).read_predictions()) == 4
    CALLS.clear()
    result = run_evaluation(request)
    assert len(CALLS) == 2 and result.summary.num_examples == 6
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_skip_invalid_records_failures(tmp_path, tiny_rows):
    from .conftest import BUNDLED

    rows = [dict(r, audio=str(BUNDLED / "shortform" / r["audio"])) for r in tiny_rows]
    rows[0]["audio"] = str(tmp_path / "gone.flac")
    manifest = write_jsonl(tmp_path / "m.jsonl", rows)
    result = run_evaluation(
        RunRequest("test-flaky", "m", str(manifest), runs_dir=str(tmp_path / "r"), skip_invalid=True, warmup=False)
    )
    assert result.summary.num_failed == 1 and result.summary.num_examples == 6


def test_config_change_refuses_to_mix_runs(tmp_path, local_manifest):
    manifest = local_manifest()
    base = dict(runs_dir=str(tmp_path / "runs"), name="same", warmup=False)
    run_evaluation(RunRequest("test-flaky", "m", str(manifest), **base))
    with pytest.raises(RunStoreError, match="different decoding"):
        run_evaluation(RunRequest("test-flaky", "m", str(manifest), decoding=DecodingOptions(beam_size=5), **base))
    again = run_evaluation(
        RunRequest("test-flaky", "m", str(manifest), decoding=DecodingOptions(beam_size=5), overwrite=True, **base)
    )
    assert again.computed == 6


def test_unknown_adapter_option_and_missing_dependency(tmp_path, local_manifest):
    with pytest.raises(OptionError, match="no option.*bogus"):
        run_evaluation(
            RunRequest(
                "test-flaky",
                "m",
                str(local_manifest()),
                runs_dir=str(tmp_path),
                decoding=DecodingOptions.from_pairs(["bogus=1"]),
            )
        )
    with pytest.raises(AdapterUnavailable, match=r"not installed.*pip install 'whisperbench\[nothing\]'"):
        run_evaluation(RunRequest("test-missing", "m", str(local_manifest()), runs_dir=str(tmp_path)))


def test_option_parsing():
    opts = DecodingOptions.from_pairs(
        ["beam_size=5", "language=de", "without_timestamps=false", "compute_type=int8", "initial_prompt=none"]
    )
    assert (opts.beam_size, opts.language, opts.without_timestamps, opts.extra) == (
        5,
        "de",
        False,
        {"compute_type": "int8"},
    )
    assert opts.initial_prompt is None
    with pytest.raises(OptionError):
        DecodingOptions.from_pairs(["beam_size=many"])
    with pytest.raises(OptionError):
        DecodingOptions.from_pairs(["novalue"])
    assert DecodingOptions(temperature_fallback=True).temperatures() == (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    assert DecodingOptions().timestamps_off(long_form=False) and not DecodingOptions().timestamps_off(long_form=True)


def test_process_pool_gives_the_same_results_as_in_process(tmp_path, tiny_rows, tiny_short):
    hyp = hypotheses_file(tmp_path, tiny_rows, drop={"jfk"}, edit={"LJ001-0003": "for although the chinese"})
    single = run_evaluation(RunRequest("recorded", str(hyp), str(tiny_short), runs_dir=str(tmp_path / "r"), name="one"))
    pooled = run_evaluation(
        RunRequest("recorded", str(hyp), str(tiny_short), runs_dir=str(tmp_path / "r"), name="two", workers=2)
    )
    assert pooled.info["backend"] == "process-pool" and pooled.computed == 6
    keys = ("wer", "num_failed", "substitutions", "deletions", "insertions", "hits")
    assert {k: getattr(pooled.summary, k) for k in keys} == {k: getattr(single.summary, k) for k in keys}
    by_id = {p.id: p for p in open_run("two", tmp_path / "r").scored()}
    assert by_id["jfk"].status == "error" and by_id["LJ001-0003"].scored().words.deletions > 0


def test_another_thread_count_resumes_the_run(tmp_path, tiny_rows, tiny_short, capsys):
    """Threads change how fast a run goes, not what it is: a rerun with another count resumes (it used to be
    refused as 'a different decoding')."""
    from whisperbench.cli import main

    hyp = write_jsonl(tmp_path / "h.jsonl", [{"id": r["id"], "hypothesis": r["text"]} for r in tiny_rows])
    args = [
        "run",
        "--adapter",
        "recorded",
        "--model",
        str(hyp),
        "--dataset",
        str(tiny_short),
        "--name",
        "t",
        "--runs-dir",
        str(tmp_path / "runs"),
        "--no-warmup",
    ]
    assert main(args + ["-o", "threads=1"]) == 0
    assert main(args + ["-o", "threads=2"]) == 0
    assert "(0 computed, 6 resumed)" in capsys.readouterr().out
    assert main(args + ["-o", "beam_size=2"]) == 2  # what a run *is* still refuses to mix


def test_a_resume_with_nothing_to_do_keeps_the_measurements(tmp_path, tiny_rows, tiny_short):
    """Rerunning a finished run (a sweep resumes every variant) must not erase its load time, speed, peak memory
    or what the adapter loaded: only an invocation that transcribes examples measures them."""
    from whisperbench.cli import main

    from .conftest import write_jsonl

    hyp = write_jsonl(tmp_path / "hyp.jsonl", [{"id": r["id"], "hypothesis": r["text"]} for r in tiny_rows])
    args = [
        "run",
        "--adapter",
        "recorded",
        "--model",
        str(hyp),
        "--dataset",
        str(tiny_short),
        "--runs-dir",
        str(tmp_path),
        "--name",
        "r",
    ]
    assert main(args) == 0
    first = {name: json.loads((tmp_path / "r" / name).read_text()) for name in ("run.json", "summary.json")}
    assert first["summary.json"]["wall_s"] is not None and first["summary.json"]["peak_rss_mb"]
    assert main(args) == 0  # nothing left to do
    again = {name: json.loads((tmp_path / "r" / name).read_text()) for name in ("run.json", "summary.json")}
    for key in ("wall_s", "load_s", "peak_rss_mb", "rtfx", "harness_overhead_pct", "rtfx_reliable", "wer"):
        assert again["summary.json"][key] == first["summary.json"][key], key
    for key in ("adapter_info", "load_s", "peak_rss_mb", "machine_load"):
        assert again["run.json"][key] == first["run.json"][key], key
