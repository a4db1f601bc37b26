"""``whisper-live``: Collabora's WhisperLive server (faster-whisper backend) started on 127.0.0.1 by the adapter,
fed over its WebSocket protocol like a live client.

The server decides on its own when to transcribe: whenever at least a second of unprocessed audio waits, it
transcribes it again, and again (about twice a second on 2 cores, with no new audio), until its segments settle;
it answers with its last segments, each ``completed`` or not: a completed segment is committed text, the last
uncompleted one the interim text. So it runs under the ``real-time`` clock only (its default here): audio is sent
as it is spoken and every answer is recorded when it arrives. The ``simulated`` clock needs an implementation that
answers once per chunk; WhisperLive never goes quiet while it holds audio, so it is refused (exit 2).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from ..core.ranges import Range
from ..process.child import WorkerCrashed, started_from_main_thread
from ..types import Example, Transcript
from .options import Option
from .streaming import Output, StreamingAdapter, StreamSession

log = logging.getLogger(__name__)

#: the longest the server may take to load the model and answer SERVER_READY (seconds)
READY_TIMEOUT_S = 120.0
_SERVER = (
    "import sys, logging; from whisperbench.process.child import die_with_parent; "
    "die_with_parent(int(sys.argv[1]), by_signal=sys.argv[4] == '1'); "
    "logging.basicConfig(level=logging.WARNING); "
    "from whisper_live.server import TranscriptionServer; "
    "TranscriptionServer().run('127.0.0.1', int(sys.argv[2]), backend='faster_whisper', "
    "faster_whisper_custom_model_path=sys.argv[3], single_model=True, max_clients=1, max_connection_time=86400)"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Session:
    """One audio's WebSocket connection: chunks out, the server's segments in (a reader thread stamps each)."""

    def __init__(self, adapter: WhisperLiveAdapter, language: str | None):
        from websockets.sync.client import connect

        self.adapter = adapter
        self.ws = connect(f"ws://127.0.0.1:{adapter.port}", max_size=None, open_timeout=30)
        options = {
            "uid": str(uuid.uuid4()),
            "language": language,
            "task": adapter.decoding.task,
            "model": str(adapter.weights_path),
            "use_vad": bool(adapter.settings["use_vad"]),
            "send_last_n_segments": 10,
            "no_speech_thresh": float(adapter.settings["no_speech_thresh"]),
            "same_output_threshold": int(adapter.settings["same_output_threshold"]),
        }
        self.ws.send(json.dumps(options))
        self._ready(time.monotonic() + READY_TIMEOUT_S)
        self.sent_s = 0.0
        self.seen: set[tuple[Any, Any]] = set()
        self.outputs: queue.Queue[Output] = queue.Queue()
        self.closed = threading.Event()
        self.reader = threading.Thread(target=self._read, name="whisper-live-reader", daemon=True)
        self.reader.start()

    def _ready(self, deadline: float) -> None:
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("message") == "SERVER_READY":
                return
            if message.get("status") in ("ERROR", "WAIT"):
                raise RuntimeError(f"whisper-live server refused the stream: {message}")

    def _read(self) -> None:
        try:
            for raw in self.ws:
                at, sent_s = time.perf_counter(), self.sent_s
                message = json.loads(raw)
                if "segments" in message:
                    self.outputs.put(self._output(message["segments"], at, sent_s))
        except Exception as exc:  # the connection closed (the end of the stream) or broke: either ends reading
            log.debug("whisper-live reader stopped: %s", exc)
        finally:
            self.closed.set()

    def _output(self, segments: list[dict[str, Any]], at: float, sent_s: float) -> Output:
        committed = []
        interim = ""
        for segment in segments:
            key = (segment.get("start"), segment.get("end"))
            if segment.get("completed"):
                if key not in self.seen:
                    self.seen.add(key)
                    committed.append(str(segment.get("text") or ""))
            else:
                interim = str(segment.get("text") or "")
        return Output("".join(committed), interim, at, sent_s)

    def _drain(self) -> list[Output]:
        out = []
        while True:
            try:
                out.append(self.outputs.get_nowait())
            except queue.Empty:
                return out

    def feed(self, chunk: np.ndarray, end_s: float) -> list[Output]:
        self.ws.send(chunk.astype(np.float32).tobytes())
        self.sent_s = end_s
        return self._drain()

    def finish(self) -> list[Output]:
        time.sleep(self.adapter.settings["settle_s"])  # a live speaker's pause: the last second gets transcribed
        try:
            self.ws.send(b"END_OF_AUDIO")
        finally:
            self.closed.wait(timeout=30)
            self.ws.close()
        return self._drain()


class WhisperLiveAdapter(StreamingAdapter):
    """WhisperLive's server (faster-whisper backend, int8 on CPU as it chooses) on the model's CTranslate2
    conversion, one WebSocket stream per audio."""

    name = "whisper-live"
    description = "WhisperLive server (faster-whisper backend) on 127.0.0.1, fed over its WebSocket protocol"
    requires = ("whisper_live", "websockets", "faster_whisper")
    install = "pip install 'whisperbench[streaming]' && pip install --no-deps whisper-live==0.10.0 (docs/streaming.md)"
    distributions = ("whisper-live", "faster-whisper", "ctranslate2", "websockets")
    cpu_in_process = False  # the server transcribes in its own process
    starting = "starting the WhisperLive server on 127.0.0.1"
    options = StreamingAdapter.options | {
        "clock": Option("real-time", "real-time only: WhisperLive transcribes on its own clock", ("real-time",)),
        "settle_s": Option(
            2.0,
            "seconds to wait after the audio's end before ending the stream (a pause after speech)",
            value_type=float,
        ),
        "use_vad": Option(True, "the server's voice-activity filter (faster-whisper's Silero VAD; its default: on)"),
        "no_speech_thresh": Option(
            0.45, "segments more likely non-speech than this are dropped", value_type=float, range=Range(0, 1)
        ),
        "same_output_threshold": Option(
            10,
            "a segment repeated this many times unchanged is committed (the server's default)",
            value_type=int,
            range=Range(1, integer=True),
        ),
    }

    def policy(self) -> str:
        return "whisper-live"

    def load(self) -> None:
        from ..models import converted, resolve_source

        self.multilingual = resolve_source(self.model).multilingual
        self.weights_path = converted(self.model, "ctranslate2")
        self._start_server()

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        """One stream (:class:`StreamingAdapter`); a server that died since the last one is started again first, and
        one that dies during this stream is started again and the example's try counted as a worker's death
        (``WorkerCrashed``): the run's retry policy (``--attempts``) tries it again on the new server, and every
        later example streams to it (before: each failed "Connection refused")."""
        if self.server.poll() is not None:
            log.warning("whisper-live server had exited (%s): starting it again", self.server.returncode)
            self._restart()
        try:
            return super().transcribe(audio, example, long_form=long_form)
        except Exception as exc:
            if self.server.poll() is None:
                raise  # the server is alive: the example's own failure
            code = self.server.returncode
            log.warning("whisper-live server died (exit %s: %s): starting it again", code, self._tail())
            self._restart()
            raise WorkerCrashed(f"the whisper-live server died (exit {code}) during this stream; restarted") from exc

    def _restart(self) -> None:
        self.close()
        self._start_server()

    def _start_server(self) -> None:
        """Start the server on a free port and wait until it listens (its log kept for the error)."""
        self.port = _free_port()
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"whisperbench-whisper-live-{self.port}.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - the server's log while it runs; close() closes it
        by_signal = "1" if started_from_main_thread() else "0"
        self.server = subprocess.Popen(
            [sys.executable, "-c", _SERVER, str(os.getpid()), str(self.port), str(self.weights_path), by_signal],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.server.poll() is not None:
                raise RuntimeError(f"whisper-live server exited ({self.server.returncode}): {self._tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError(f"whisper-live server did not listen within {READY_TIMEOUT_S:g} s: {self._tail()}")

    def _tail(self) -> str:
        lines = self.log_path.read_text(errors="replace").strip().splitlines()
        return " | ".join(lines[-4:]) or "(no output)"

    def open_stream(self, example: Example) -> StreamSession:
        language = self.decoding.language_for(self.multilingual, example) if self.multilingual else "en"
        return _Session(self, language)

    def close(self) -> None:
        server = getattr(self, "server", None)
        if server is not None and server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
        log_file = getattr(self, "_log", None)
        if log_file is not None:
            log_file.close()
            self.log_path.unlink(missing_ok=True)  # quoted in the error when the server failed; not needed after


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = WhisperLiveAdapter
