"""Native crash and hang isolation: ``--isolate`` / ``--timeout-s`` fail one example, the run goes on.

The faults are injected on top of the real openai-whisper adapter (real weights, real decoding):
one example aborts the process the way a native assertion does, one hangs forever.
"""

from __future__ import annotations

import os
import time

import pytest

from whisperbench.adapters import Adapter, DecodingOptions
from whisperbench.adapters.openai_whisper import OpenAIWhisperAdapter
from whisperbench.harness import RunRequest, run_evaluation
from whisperbench.harness.isolation import IsolatedAdapter
from whisperbench.harness.spec import AdapterSpec
from whisperbench.process.child import WorkerCrashed
from whisperbench.store.runs import open_run
from whisperbench.types import Transcript

from .conftest import REPO

pytest.importorskip("whisper", reason="pip install 'whisperbench[openai-whisper]' torch==2.13.0")

ABORTS, HANGS = "1089-134691-0001", "LJ001-0003"


class FaultyWhisper(OpenAIWhisperAdapter):
    """openai-whisper, except that one example aborts (SIGABRT) and one never returns."""

    def transcribe(self, audio, example, *, long_form):
        if example.id == ABORTS:
            os.abort()
        if example.id == HANGS:
            time.sleep(3600)
        return super().transcribe(audio, example, long_form=long_form)


@pytest.fixture
def importable_tests(monkeypatch):
    """The child process imports FaultyWhisper by its module path."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))


def _run(tmp_path, tiny_short, *, timeout_s, adapter_cls=FaultyWhisper, name="isolated"):
    """The faulty subclass of openai-whisper, named by its import path (as a team's own adapter would be)."""
    request = RunRequest(
        adapter=f"{__name__}:{adapter_cls.__name__}",
        model="tiny.en",
        dataset=str(tiny_short),
        runs_dir=str(tmp_path),
        name=name,
        decoding=DecodingOptions(threads=1),
        isolate=True,
        timeout_s=timeout_s,
        warmup=False,
    )
    return run_evaluation(request)


class RefreshProbe(Adapter):
    """Transcribes every clip as whether it was told to refresh (the flag a cached API reference honours)."""

    name = "refresh-probe"
    uses_weights = False
    needs_audio = False

    def load(self) -> None:
        pass

    def transcribe(self, audio, example, *, long_form):
        return Transcript(text=f"refresh {self.refresh}")


@pytest.mark.parametrize(
    "backend,extra",
    [
        ("process-pool", {"workers": 2}),
        ("in-process", {"isolate": True}),
        pytest.param("ray", {"workers": 1}, marks=pytest.mark.slow),  # a local Ray start: ~10 s each
        pytest.param("ray", {"workers": 1, "isolate": True}, marks=pytest.mark.slow),
    ],
)
def test_refresh_reaches_the_adapter_on_every_backend(backend, extra, tmp_path, tiny_short, importable_tests):
    """Before one adapter spec, --refresh was lost under --workers 2 and --isolate (the adapter saw False)."""
    if backend == "ray":
        pytest.importorskip("ray")
    request = RunRequest(
        adapter=f"{__name__}:RefreshProbe",
        model="-",
        dataset=str(tiny_short),
        runs_dir=str(tmp_path),
        name="probe",
        decoding=DecodingOptions(threads=1),
        refresh=True,
        warmup=False,
        limit=2,
        backend=backend,
        **extra,
    )
    result = run_evaluation(request)
    assert [p.hypothesis for p in result.store.read_predictions()] == ["refresh True"] * 2


def test_a_crash_and_a_hang_fail_only_their_examples(tmp_path, tiny_rows, local_manifest, importable_tests):
    """Three clips: one aborts, one hangs, one is transcribed (the hang costs the timeout: 6 s, about 4x what
    a one-thread tiny.en call on jfk (11 s of audio) takes on 2 cores)."""
    rows = [r for r in tiny_rows if r["id"] in (ABORTS, "jfk", HANGS)]
    result = _run(tmp_path, local_manifest(rows), timeout_s=6)
    predictions = {p.id: p for p in open_run(result.store.path).scored()}
    assert len(predictions) == 3
    crashed, hung = predictions[ABORTS], predictions[HANGS]
    assert crashed.status == "error" and "SIGABRT" in crashed.error and ABORTS in crashed.error, crashed.error
    assert hung.status == "error" and "no answer" in hung.error and "within 6 s" in hung.error, hung.error
    assert "new worker" in crashed.error and "new worker" in hung.error
    others = [p for i, p in predictions.items() if i not in (ABORTS, HANGS)]
    assert all(p.status == "ok" for p in others)
    assert predictions["jfk"].wer == 0.0, predictions["jfk"].hypothesis
    info = result.info["adapter_info"]
    assert "on each of its 2 attempts" in crashed.error  # the retry policy: a crash is tried again, a hang not
    assert info["isolated"] is True and info["worker_restarts"] == 3 and info["timeout_s"] == 6
    assert info["worker_peak_rss_mb"] > 100  # the child holds the model
    assert result.summary.num_failed == 2


def test_isolated_results_equal_in_process_results(tmp_path, tiny_short, shared_runs):
    """Isolation changes where the model runs, not what it outputs (the in-process run: the session's reference)."""
    boxed = run_evaluation(
        RunRequest(
            adapter="openai-whisper",
            model="tiny.en",
            dataset=str(tiny_short),
            runs_dir=str(tmp_path),
            decoding=DecodingOptions(threads=1),
            warmup=False,
            limit=3,
            name="boxed",
            isolate=True,
        )
    )
    plain = {p.id: p.hypothesis for p in shared_runs.reference(tiny_short).predictions}
    got = boxed.store.read_predictions()
    assert len(got) == 3 and all(p.hypothesis == plain[p.id] for p in got)
    assert boxed.info["adapter_info"]["worker_restarts"] == 0


def test_a_load_failure_in_the_child_is_a_clear_error(tmp_path):
    adapter = AdapterSpec("openai-whisper", "no-such-model", DecodingOptions(threads=1), isolate=True).build()
    assert isinstance(adapter, IsolatedAdapter)
    with pytest.raises(Exception, match="could not load no-such-model in its worker"):
        adapter.load()
    adapter.close()


@pytest.mark.slow  # the default tier proves the same crash through a whole isolated run
def test_worker_crashed_is_raised_for_a_dead_child(tiny_short, importable_tests):
    from whisperbench.datasets import load_dataset
    from whisperbench.datasets.audio import load_audio

    example = next(e for e in load_dataset(str(tiny_short)).dataset.examples if e.id == ABORTS)
    adapter = AdapterSpec(f"{__name__}:FaultyWhisper", "tiny.en", DecodingOptions(threads=1), isolate=True).build()
    adapter.load()
    try:
        with pytest.raises(WorkerCrashed, match="SIGABRT"):
            adapter.transcribe(load_audio(example.audio), example, long_form=False)
    finally:
        adapter.close()


def test_an_interrupted_call_never_answers_the_next_one(tmp_path):
    """Ctrl-C while the parent waits for a child's reply: the reply would arrive later and answer the next request
    (a Transcript where a list was expected: "TypeError: 'Transcript' object is not iterable"). The interrupted
    child is stopped at once, so the next call fails as a crash, never with another call's answer; the child
    itself ignores Ctrl-C (the parent stops it)."""
    import signal

    from whisperbench.process.child import ChildProcess, WorkerCrashed

    child = ChildProcess("tests.slow_worker:SlowWorker", {"slow_s": 3.0}, tmp_path / "child.log", label="slow")
    assert child.call("echo", 1) == 1

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 0.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            child.call("slow", 2)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert child.process.poll() is not None  # stopped, not left to answer later
    with pytest.raises(WorkerCrashed):
        child.call("echo", 3)


def test_a_child_reports_the_cpu_seconds_of_every_thread_during_a_call(tmp_path):
    """Each reply carries the child's process CPU seconds of the call (its other threads included, as whisper.cpp's
    native ones): how whisper.cpp and --isolate runs get the CPU time that --speed-basis cpu judges."""
    from whisperbench.process.child import ChildProcess

    child = ChildProcess("tests.slow_worker:SlowWorker", {}, tmp_path / "child.log", label="burner")
    try:
        spun = child.call("burn", 0.4)
        assert spun >= 0.4 and child.last_cpu_s is not None
        assert spun <= child.last_cpu_s < spun + 0.3  # the thread's CPU counted, the equal sleep not
        child.call("echo", 1)
        assert child.last_cpu_s < 0.1
    finally:
        child.stop()
