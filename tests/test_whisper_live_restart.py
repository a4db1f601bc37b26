"""The whisper-live server dying mid-run (issue 69, item 3): it is started again, the example whose stream it
broke is tried again under the run's retry policy (``--attempts``), and the examples after it stream to the new
server instead of failing "Connection refused" one by one. The server and its streams are stand-ins here (the real
server's model load and real-time streams take a minute); the adapter's and the harness's code are the real ones."""

from __future__ import annotations

import pytest

from whisperbench.adapters import whisper_live
from whisperbench.types import Example, Transcript


class _Process:
    """A stand-in for the server's process: alive until killed."""

    def __init__(self) -> None:
        self.returncode = None

    def poll(self):
        return self.returncode

    def kill(self) -> None:
        self.returncode = -9


@pytest.fixture
def adapter(monkeypatch):
    started: list[_Process] = []

    def start(self) -> None:
        self.server = _Process()
        started.append(self.server)

    monkeypatch.setattr(whisper_live.WhisperLiveAdapter, "_start_server", start)
    monkeypatch.setattr(whisper_live.WhisperLiveAdapter, "close", lambda self: None)
    monkeypatch.setattr(whisper_live.WhisperLiveAdapter, "_tail", lambda self: "(log)")
    made = whisper_live.WhisperLiveAdapter.__new__(whisper_live.WhisperLiveAdapter)
    made._start_server()
    made.started = started
    return made


class _Direct:
    """The harness's strategy reduced to one call of the adapter (no audio to load)."""

    @staticmethod
    def run(adapter, example, long_form):
        from whisperbench.harness.longform import Outcome

        return Outcome(adapter.transcribe(None, example, long_form=long_form), 1.0, 0.1)


def _streams(monkeypatch, behaviour):
    """Make each stream call ``behaviour(adapter, example)`` in place of the WebSocket exchange."""

    def transcribe(self, audio, example, *, long_form):
        return behaviour(self, example)

    monkeypatch.setattr(whisper_live.StreamingAdapter, "transcribe", transcribe)


def test_a_server_killed_mid_stream_is_restarted_and_the_example_retried(adapter, monkeypatch):
    from whisperbench.harness.examples import ExampleRunner
    from whisperbench.harness.retry import RetryPolicy

    calls: list[str] = []

    def behaviour(self, example):
        calls.append(example.id)
        if len(calls) == 1:  # the server is killed while the first stream runs
            self.server.kill()
            raise ConnectionRefusedError("[Errno 111] Connection refused")
        return Transcript(text=f"text of {example.id}")

    _streams(monkeypatch, behaviour)
    runner = ExampleRunner.__new__(ExampleRunner)
    runner.adapter, runner.retry, runner.long_form, runner.timed = adapter, RetryPolicy(attempts=2), False, False
    runner.strategy = _Direct()
    first = runner.run(Example("a", b"", "x"))
    second = runner.run(Example("b", b"", "y"))
    assert len(adapter.started) == 2  # the dead server replaced once
    assert first.status == "ok" and first.hypothesis == "text of a" and first.extra["attempts"] == 2
    assert second.status == "ok" and calls == ["a", "a", "b"]


def test_with_one_attempt_the_example_fails_naming_the_death_and_the_next_one_runs(adapter, monkeypatch):
    from whisperbench.harness.examples import ExampleRunner
    from whisperbench.harness.retry import RetryPolicy

    def behaviour(self, example):
        if example.id == "a":
            self.server.kill()
            raise ConnectionRefusedError("refused")
        return Transcript(text="fine")

    _streams(monkeypatch, behaviour)
    runner = ExampleRunner.__new__(ExampleRunner)
    runner.adapter, runner.retry, runner.long_form, runner.timed = adapter, RetryPolicy(attempts=1), False, False
    runner.strategy = _Direct()
    failed, after = runner.run(Example("a", b"", "x")), runner.run(Example("b", b"", "y"))
    assert failed.status == "error" and "whisper-live server died" in failed.error
    assert after.status == "ok" and after.hypothesis == "fine"


def test_a_server_dead_between_examples_is_restarted_before_the_next_stream(adapter, monkeypatch):
    _streams(monkeypatch, lambda self, example: Transcript(text="ok"))
    adapter.server.kill()
    assert adapter.transcribe(None, Example("a", b"", "x"), long_form=False).text == "ok"
    assert len(adapter.started) == 2


def test_an_example_failing_on_a_live_server_is_not_retried(adapter, monkeypatch):
    def behaviour(self, example):
        raise RuntimeError("whisper-live server refused the stream")

    _streams(monkeypatch, behaviour)
    with pytest.raises(RuntimeError, match="refused the stream"):
        adapter.transcribe(None, Example("a", b"", "x"), long_form=False)
    assert len(adapter.started) == 1
