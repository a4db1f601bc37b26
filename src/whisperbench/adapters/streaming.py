"""Streaming implementations: the audio fed in chunks under one of two clocks, every output recorded.

A streaming adapter opens a :class:`StreamSession` per audio (the implementation's online processor, or a
connection to its server); :func:`feed` drives it and returns the stream's :class:`~whisperbench.types.Emission`
list. The final hypothesis is the committed text, so every file-based figure (WER, QoI, hallucination,
formatting) applies to a streaming run unchanged; ``scoring/streaming.py`` measures the stream itself.

The two clocks, as SimulStreaming's authors separate them:

- ``simulated`` (computation-unaware, the default): the next chunk is fed when the previous one is processed;
  an emission counts at its audio cursor. The lower bound of latency, the same on a busy machine.
- ``real-time`` (computation-aware): audio arrives as it would from a microphone; while the implementation
  works, audio accumulates and the next call gets all of it. An emission counts at its wall time since the
  stream started: what a user on this machine would see.
"""

from __future__ import annotations

import logging
import time
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..core.ranges import Range
from ..datasets.audio import SAMPLE_RATE
from ..scoring.streaming import shown_then_dropped
from ..types import Emission, Example, Transcript
from .base import Adapter
from .options import Option

log = logging.getLogger(__name__)

#: ``-o clock=…``: simulated (computation-unaware) or real-time (computation-aware)
CLOCKS = ("simulated", "real-time")


@dataclass(frozen=True)
class Output:
    """One output of a stream: the text it commits, the whole interim text after it, and — for an implementation
    that answers on its own time (a server) — when it arrived (``time.perf_counter``) and how much audio had been
    sent by then; None: now, and all the audio fed so far."""

    committed: str = ""
    interim: str = ""
    at: float | None = None
    audio_s: float | None = None


class StreamSession(Protocol):
    """One audio's stream: ``feed`` a chunk ending at ``end_s`` (seconds of audio fed so far) and get back the
    outputs it gave since the last call; ``finish`` at the end of the audio gives the last ones."""

    def feed(self, chunk: np.ndarray, end_s: float) -> list[Output]:
        """Take ``chunk`` (the audio up to ``end_s``); return the outputs since the last call, in order."""
        ...

    def finish(self) -> list[Output]:
        """The audio has ended: return the last outputs (what is still interim stays interim)."""
        ...


def feed(
    session: StreamSession,
    audio: np.ndarray,
    chunk_s: float,
    clock: str = "simulated",
    *,
    now: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Emission]:
    """Drive ``session`` over ``audio`` (16 kHz mono) in chunks of ``chunk_s`` seconds under ``clock``; the
    emissions that changed what is shown (new committed text or a different interim), and always the last.

    >>> class Echo:  # commits each chunk's length, keeps nothing interim
    ...     def feed(self, chunk, end_s): return [Output(f" {len(chunk)}")]
    ...     def finish(self): return []
    >>> [(e.audio_s, e.committed) for e in feed(Echo(), np.zeros(24000, np.float32), 1.0)]
    [(1.0, ' 16000'), (1.5, ' 8000'), (1.5, '')]
    """
    if clock not in CLOCKS:
        raise ValueError(f"clock {clock!r}: use one of {', '.join(CLOCKS)}")
    step = max(1, int(round(chunk_s * SAMPLE_RATE)))
    total = len(audio)
    emissions: list[Emission] = []
    shown = [""]  # the interim text the last emission left
    start = now()

    def record(outputs: list[Output], fed_s: float, last: bool = False) -> None:
        for i, out in enumerate(outputs):
            final = last and i == len(outputs) - 1
            if out.committed or out.interim != shown[0] or final:
                at = now() if out.at is None else out.at
                cursor = fed_s if out.audio_s is None else out.audio_s
                emissions.append(Emission(cursor, at - start, out.committed, out.interim))
            shown[0] = out.interim
        if last and not outputs:  # the end of the stream is always an emission: the final text stands
            emissions.append(Emission(fed_s, now() - start, "", shown[0]))

    fed = 0
    while fed < total:
        upto = min(total, fed + step)
        if clock == "real-time":
            arrived = min(total, int((now() - start) * SAMPLE_RATE))
            if arrived < upto:
                sleep((upto - arrived) / SAMPLE_RATE)
                continue
            upto = arrived  # what arrived while the previous chunk was processed comes in one piece
        outputs = session.feed(audio[fed:upto], upto / SAMPLE_RATE)
        fed = upto
        record(outputs, fed / SAMPLE_RATE)
    record(session.finish(), total / SAMPLE_RATE, last=True)
    return emissions


def committed_text(stream: list[Emission]) -> str:
    """The stream's final hypothesis: every committed piece in order, then what the last emission still showed
    as interim (an implementation that ends with uncommitted text has said it)."""
    return ("".join(e.committed for e in stream) + (stream[-1].interim if stream else "")).strip()


class StreamingAdapter(Adapter):
    """An implementation fed like a live stream: subclasses load the model and open one session per audio."""

    native_long_form = True
    long_form_algorithm = "streaming: the whole audio fed in chunks, the policy decides what to commit"
    options = {
        "chunk_s": Option(
            1.0,
            "seconds of audio per chunk fed to the stream",
            value_type=float,
            range=Range(0, open_low=True, unit="s"),
        ),
        "clock": Option(
            "simulated",
            "simulated (computation-unaware: the next chunk when the last is processed; latency in audio "
            "time, the default on CI) or real-time (audio arrives as it is spoken; latency in wall time)",
            CLOCKS,
        ),
    }

    @abstractmethod
    def open_stream(self, example: Example) -> StreamSession:
        """A fresh session for one audio."""

    def policy(self) -> str:
        """The streaming policy's name (for run.json and tables)."""
        return self.name

    def stream_facts(self) -> dict[str, Any]:
        """What each prediction records of how it was streamed (``extra["streaming"]``)."""
        return {"policy": self.policy(), "chunk_s": self.settings["chunk_s"], "clock": self.settings["clock"]}

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        assert audio is not None
        chunk_s = float(self.settings["chunk_s"])
        if not chunk_s > 0:
            raise ValueError(f"chunk_s {chunk_s!r}: give a positive number of seconds")
        stream = feed(self.open_stream(example), audio, chunk_s, self.settings["clock"])
        text = committed_text(stream)
        dropped = shown_then_dropped([e.to_json() for e in stream], text)
        if dropped:
            log.warning("example %s: the stream showed %r, then ended with an empty transcript", example.id, dropped)
        return Transcript(text, stream=stream, extra={"streaming": self.stream_facts()})

    def describe(self) -> dict[str, Any]:
        return super().describe() | {"streaming": self.stream_facts()}
