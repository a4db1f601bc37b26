"""``whisperlivekit``: WhisperLiveKit's streaming policies on our weights, fed chunk by chunk in process.

Two policies (``-o policy=…``):

- ``simulstreaming`` (AlignAtt, SimulStreaming's policy): the PyTorch Whisper decoder with its alignment heads
  decides when a word is safe to commit; the encoder runs in faster-whisper (CTranslate2) as WhisperLiveKit
  does by default. Commits directly: no interim text.
- ``localagreement`` (whisper_streaming's LocalAgreement-2): faster-whisper transcribes the growing buffer
  and commits the prefix two runs agree on; the rest is interim.

Each audio gets a fresh online processor (``whisperlivekit.core.online_factory``) fed directly, without the
server's Silero voice-activity controller (``vac``) in front: the policy alone is measured.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..core.ranges import Range
from ..types import Example
from .options import Option
from .streaming import Output, StreamingAdapter, StreamSession

log = logging.getLogger(__name__)

POLICIES = ("simulstreaming", "localagreement")


class _Session:
    """One audio's WhisperLiveKit online processor."""

    def __init__(self, processor: Any, simul: bool):
        self.processor = processor
        self.simul = simul

    def feed(self, chunk: np.ndarray, end_s: float) -> list[Output]:
        self.processor.insert_audio_chunk(chunk.astype(np.float32, copy=False), end_s)
        tokens, _ = self.processor.process_iter()
        return [Output(_text(tokens), self.processor.get_buffer().text or "")]

    def finish(self) -> list[Output]:
        if self.simul:
            tokens, _ = self.processor.process_iter(is_last=True)
        else:
            tokens, _ = self.processor.finish()
        return [Output(_text(tokens), "")]


def _text(tokens: Any) -> str:
    return "".join(token.text or "" for token in tokens or [])


class WhisperLiveKitAdapter(StreamingAdapter):
    """WhisperLiveKit (SimulStreaming's AlignAtt or LocalAgreement) on the model's PyTorch and CTranslate2
    conversions."""

    name = "whisperlivekit"
    description = "WhisperLiveKit streaming (SimulStreaming AlignAtt or LocalAgreement), fed in chunks"
    requires = ("whisperlivekit", "faster_whisper")
    distributions = ("whisperlivekit", "faster-whisper", "ctranslate2", "torch")
    install = (
        "pip install 'whisperbench[streaming]' && pip install --no-deps whisperlivekit==0.2.26 (docs/streaming.md)"
    )
    starting = "loading the model and warming the streaming policy up"
    options = StreamingAdapter.options | {
        "policy": Option("simulstreaming", "the streaming policy", POLICIES),
        "frame_threshold": Option(
            25, "SimulStreaming: encoder frames the attention must stay behind the audio's end", value_type=int
        ),
        "buffer_trimming_s": Option(
            15.0,
            "LocalAgreement: trim the audio buffer past this length",
            value_type=float,
            range=Range(0, open_low=True),
        ),
    }

    def policy(self) -> str:
        return str(self.settings["policy"])

    def load(self) -> None:
        import torch

        TranscriptionEngine = _core().TranscriptionEngine
        torch.set_num_threads(self.decoding.threads)  # the PyTorch decoder; CTranslate2 picks its own threads

        from ..models import converted, resolve_source

        source = resolve_source(self.model)
        self.multilingual = source.multilingual
        ct2 = converted(self.model, "ctranslate2")
        kwargs: dict[str, Any] = {
            "backend_policy": self.policy(),
            "backend": "faster-whisper",
            "lan": self._engine_language(),
            "vac": False,
            "vad": False,
            "min_chunk_size": float(self.settings["chunk_s"]),
            "warmup_file": str(_warmup_clip()),
            "log_level": "WARNING",
        }
        if self.policy() == "simulstreaming":
            kwargs |= {
                "decoder_model_path": str(self._named_checkpoint(converted(self.model, "openai-whisper"))),
                "encoder_model_path": str(ct2),
                "frame_threshold": int(self.settings["frame_threshold"]),
                "beams": self.decoding.beam_size,
            }
        else:
            kwargs |= {"model_dir": str(ct2), "buffer_trimming_sec": float(self.settings["buffer_trimming_s"])}
        self.weights_path = ct2
        TranscriptionEngine.reset()  # a process-wide singleton: a second adapter must not get the first's model
        self.engine = TranscriptionEngine(**kwargs)

    def _engine_language(self) -> str:
        """The language the engine decodes in: the run's ``-o language=…`` when it names one (WhisperLiveKit's
        SimulStreaming commits nothing until it has detected the language when told "auto", and drops what it held
        at the end of a clip too short for that), "auto" to detect (or per example with ``language=dataset``)."""
        forced = self.decoding.language_for(self.multilingual)
        return forced if forced and forced != "dataset" else "auto"

    def _named_checkpoint(self, checkpoint: Path) -> Path:
        """The checkpoint under a name WhisperLiveKit reads correctly: it takes an English-only model from a
        name ending in ``.en`` (else it decodes with the multilingual tokenizer), so link it as such."""
        self._links = Path(tempfile.mkdtemp(prefix="whisperbench-wlk-"))
        link = self._links / ("model.pt" if self.multilingual else "model.en.pt")
        link.symlink_to(checkpoint.resolve())
        return link

    def open_stream(self, example: Example) -> StreamSession:
        online_factory = _core().online_factory
        language = self.decoding.language_for(self.multilingual, example) if self.multilingual else None
        processor = online_factory(self.engine.args, self.engine.asr, language=language)
        return _Session(processor, simul=self.policy() == "simulstreaming")

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        model = getattr(getattr(self.engine.asr, "model", None), "model", None)  # LocalAgreement: a WhisperModel
        if model is not None and hasattr(model, "compute_type"):
            info["compute_type"] = model.compute_type
        return info

    def close(self) -> None:
        _core().TranscriptionEngine.reset()
        self.engine = None
        links = getattr(self, "_links", None)
        if links is not None:
            shutil.rmtree(links, ignore_errors=True)


def _core() -> Any:
    """``whisperlivekit.core``, imported without the ``logging.basicConfig`` its package runs at import (which
    would print every log record of every library twice); its own records from warnings up."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import whisperlivekit.core as core
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        logging.getLogger("whisperlivekit").setLevel(logging.WARNING)
        # said for every processor: "No CIF checkpoint configured" (SimulStreaming's default, documented)
        logging.getLogger("whisperlivekit.simul_whisper.eow_detection").setLevel(logging.ERROR)
    return core


def _warmup_clip() -> Path:
    """The bundled jfk clip: WhisperLiveKit warms up on it (without a file it tries to download one)."""
    from ..datasets import bundled_datasets

    return bundled_datasets()["tiny-shortform"].parent / "audio" / "jfk.flac"


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = WhisperLiveKitAdapter
