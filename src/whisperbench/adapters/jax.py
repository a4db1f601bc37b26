"""``jax``: Flax Whisper, jit-compiled and batched as Whisper JAX runs it.

Whisper JAX is built on transformers' ``FlaxWhisperForConditionalGeneration`` (transformers 4.x;
Transformers 5 removed Flax) and is not on PyPI, so this adapter runs that model directly: the
weights are the ``flax`` conversion of the one source checkpoint (no torch, no hub), and one
function - encoder, optional language detection, and transformers' Flax greedy ``generate`` - is
compiled ahead of time in ``load()`` for one shape, (``batch_size``, max length). Its compile time
is reported apart (``compile_s`` in run.json's adapter_info, ``compile_s_total`` in the summary);
``load_s`` includes it, inference never does. A batch with fewer audios is filled with copies of
its last one, so exactly one compiled program exists and the fillers stop where the real one stops.

Decoding matches openai-whisper's greedy short-form ``transcribe``: the same initial tokens
(``<|startoftranscript|>`` [language, task] ``<|notimestamps|>``, after ``<|startofprev|>`` and the
prompt when ``initial_prompt`` is set), the same suppressed tokens, the blank/EOT suppression at the
first step, at most 224 new tokens (``n_text_ctx // 2``), and the same input: the log-mel of the clip
computed on audio padded with 30 s of zeros and cut to the clip, then padded with zeros in the
log-mel domain to 3000 frames (HF's feature extractor pads the *audio* to 30 s instead, which
changes some transcripts). A multilingual model without ``language`` detects it per audio, as
openai-whisper does, inside the compiled function.

Long-form: no algorithm of its own (``native_long_form = False``): the harness's chunked strategy cuts
30 s windows with stride, transcribes them ``batch_size`` at a time with ``transcribe_batch`` and
merges them at the overlaps, which is Whisper JAX's algorithm.

Options: ``batch_size`` (8), ``dtype`` float32 (default) or bfloat16 (the computation dtype, as in
Whisper JAX; parameters stay float32), ``max_new_tokens`` (224). Greedy only.
CPU here (``jax[cpu]``); the same code runs on a GPU or TPU with ``jax[cuda12]`` / ``jax[tpu]``.
"""

from __future__ import annotations

import os
from types import SimpleNamespace
from typing import Any

import numpy as np

from ..core.ranges import Range
from ..datasets.audio import SAMPLE_RATE
from ..errors import OptionError
from ..types import Example, Transcript
from .base import Adapter, DecodingOptions, window_transcript
from .jax_compile import N_FRAMES, Program, ProgramBuilder
from .options import Option

N_FFT = 400
HOP_LENGTH = 160
CHUNK_S = 30
N_SAMPLES = CHUNK_S * SAMPLE_RATE
DTYPES = ("float32", "bfloat16")


def log_mel_like_openai_whisper(audio: np.ndarray, filters: np.ndarray) -> np.ndarray:
    """The (n_mels, 3000) float32 log-mel that openai-whisper's ``transcribe`` decodes for a clip <= 30 s.

    As ``whisper.log_mel_spectrogram(audio, padding=N_SAMPLES)`` (periodic Hann window, centred
    reflect-padded STFT, last frame dropped, log10 clamped to 8 below the maximum, scaled), cut to
    the clip's ``len(audio) // 160`` frames and padded with zeros to 3000 frames. ``filters`` is
    the (n_mels, 201) mel filterbank. Only the frames that reach the audio are computed: the rest of
    openai-whisper's 30 s of padding is silence, whose log10 (-10) only enters through the maximum.
    """
    padded = np.concatenate([np.asarray(audio, dtype=np.float64), np.zeros(N_FFT)])
    padded = np.pad(padded, N_FFT // 2, mode="reflect")
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP_LENGTH]
    power = np.abs(np.fft.rfft(frames * window, axis=-1)) ** 2
    log_spec = np.log10(np.maximum(filters @ power.T, 1e-10))
    peak = max(float(log_spec.max()), -10.0)
    content = min(len(audio) // HOP_LENGTH, N_FRAMES)
    mel = np.zeros((filters.shape[0], N_FRAMES), dtype=np.float32)
    mel[:, :content] = (np.maximum(log_spec[:, :content], peak - 8.0) + 4.0) / 4.0
    return mel


def _limit_xla_threads(threads: int) -> None:
    """One thread asks XLA's CPU backend for single-threaded kernels; read when the backend starts."""
    flags = os.environ.get("XLA_FLAGS", "")
    if threads == 1 and "xla_cpu_multi_thread_eigen" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1".strip()


class JaxAdapter(Adapter):
    """Flax Whisper as Whisper JAX runs it: jit-compiled, batched greedy decoding on the same weights."""

    name = "jax"
    prompting = "initial_prompt"  # <|startofprev|> + the prompt's tokens, compiled once
    prompts_each_example = False
    description = (
        "Flax Whisper (transformers' FlaxWhisperForConditionalGeneration, as Whisper JAX), jit-compiled batched greedy"
    )
    requires = ("jax", "flax", "transformers")
    extra = "jax"
    distributions = ("jax", "jaxlib", "flax", "transformers")
    native_long_form = False
    long_form_algorithm = "none of its own: the harness's chunked strategy (Whisper JAX's batched 30 s windows)"
    no_word_timing = "the Flax model's jit-compiled batched greedy loop keeps no cross-attention to align words with"
    options = {
        "batch_size": Option(8, "clips per compiled batch", range=Range(1, integer=True)),
        "dtype": Option("float32", "Flax compute dtype"),
        "max_new_tokens": Option(224, "decode length of the compiled loop", range=Range(1, integer=True)),
    }
    variants = {name: {"dtype": name} for name in ("float32", "bfloat16")}

    @classmethod
    def summary_fields(cls, adapter_info: dict, predictions: list) -> dict:
        """jit compilation time, reported apart and never inside RTFx."""
        total = adapter_info.get("compile_s_total")
        return {"compile_s": total} if total is not None else {}

    def __init__(self, model: str, decoding: DecodingOptions | None = None):
        super().__init__(model, decoding)
        d = self.decoding
        try:
            self._batch_size = int(self.settings["batch_size"])
            self.max_new_tokens = int(self.settings["max_new_tokens"])
        except ValueError as exc:
            raise OptionError(f"adapter jax: batch_size and max_new_tokens must be integers: {exc}") from exc
        if self._batch_size < 1 or self.max_new_tokens < 1:
            raise OptionError("adapter jax: batch_size and max_new_tokens must be >= 1")
        if self.settings["dtype"] not in DTYPES:
            raise OptionError(f"adapter jax: dtype {self.settings['dtype']!r} is not one of {', '.join(DTYPES)}")
        refused = {
            "beam_size": d.beam_size != 1,
            "temperature": d.temperature != 0.0 or d.temperature_fallback,
            "no_speech_threshold": d.no_speech_threshold is not None,
            "logprob_threshold": d.logprob_threshold is not None,
            "compression_ratio_threshold": d.compression_ratio_threshold is not None,
        }
        if any(refused.values()):
            names = ", ".join(k for k, bad in refused.items() if bad)
            raise OptionError(f"adapter jax: greedy decoding of single windows only; unsupported: {names}")
        self.compile_s: dict[str, float] = {}
        self._programs: dict[bool, Program] = {}  # timestamps -> compiled program

    @property
    def batch_size(self) -> int:
        return self._batch_size

    def load(self) -> None:
        _limit_xla_threads(self.decoding.threads)
        import jax
        import jax.numpy as jnp
        from transformers import FlaxWhisperForConditionalGeneration, WhisperFeatureExtractor, WhisperTokenizerFast
        from transformers.utils import logging as hf_logging

        from ..models import converted, resolve_source

        hf_logging.set_verbosity_error()  # the Flax deprecation notice; errors still surface
        self.multilingual = resolve_source(self.model).multilingual
        self.weights_path = converted(self.model, "flax")
        folder = str(self.weights_path)
        self.net, params = FlaxWhisperForConditionalGeneration.from_pretrained(
            folder, _do_init=False, dtype=getattr(jnp, self.settings["dtype"]), local_files_only=True
        )
        self.params = jax.device_put(params)
        self.tokenizer = WhisperTokenizerFast.from_pretrained(folder, local_files_only=True)
        self.mel_filters = np.asarray(WhisperFeatureExtractor.from_pretrained(folder).mel_filters, dtype=np.float64).T
        self.builder = ProgramBuilder(
            self.net,
            self.tokenizer,
            self.decoding,
            self.model,
            self.multilingual,
            self._batch_size,
            self.max_new_tokens,
        )
        self.eot, self.timestamp_begin = self.builder.eot, self.builder.timestamp_begin
        for timestamps in (False, True):
            program, seconds = self.builder.compile(self.params, timestamps)
            self._programs[timestamps], self.compile_s[program.key] = program, seconds

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        if long_form:
            raise NotImplementedError(
                "adapter jax has no long-form algorithm of its own: long-form datasets go "
                "through the harness's chunked strategy (30 s windows, batched)"
            )
        assert audio is not None  # needs_audio: the runner passes the decoded clip
        return self.transcribe_batch([audio], [example])[0]

    def transcribe_batch(
        self, audios: list[np.ndarray], examples: list[Example], *, timestamps: bool = False
    ) -> list[Transcript]:
        """Greedy transcripts of clips <= 30 s, ``batch_size`` at a time through one compiled program.

        ``timestamps=True`` (the harness's long-form windows) decodes with openai-whisper's timestamp
        rules; the text leaves the timestamps out and ``segments`` holds the completed segments.
        """
        for audio, example in zip(audios, examples):
            if len(audio) > N_SAMPLES + HOP_LENGTH:
                raise ValueError(
                    f"example {example.id}: {len(audio) / SAMPLE_RATE:.1f} s is longer than one 30 s "
                    "window; the jax adapter takes long-form audio through the harness's chunked strategy"
                )
        program = self._programs[timestamps]
        transcripts: list[Transcript] = []
        for first in range(0, len(audios), self._batch_size):
            part = slice(first, first + self._batch_size)
            transcripts += self._run_batch(program, audios[part], examples[part], timestamps)
        return transcripts

    def _run_batch(
        self, program: Program, audios: list[np.ndarray], examples: list[Example], timestamps: bool
    ) -> list[Transcript]:
        features = np.stack([log_mel_like_openai_whisper(audio, self.mel_filters) for audio in audios])
        fill = self._batch_size - len(audios)  # copies of the last clip: they finish when it does
        features = np.concatenate([features, np.repeat(features[-1:], fill, axis=0)]) if fill else features
        prompts = np.tile(program.prompt, (self._batch_size, 1))
        if program.language_index is not None:  # -o language=dataset: each row its example's language token
            for row, example in enumerate(examples):
                language = self.decoding.language_for(True, example)
                if language is not None:
                    prompts[row, program.language_index] = self.builder.language_token(language)
        sequences, prompts = program.compiled(self.params, features, prompts)
        sequences, prompts = np.asarray(sequences), np.asarray(prompts)
        return [
            self._transcript(sequences[i, len(program.prompt) :].tolist(), prompts[i], program, timestamps)
            for i in range(len(audios))
        ]

    def _transcript(self, tokens: list[int], prompt: np.ndarray, program: Program, timestamps: bool) -> Transcript:
        """The sampled tokens up to EOT, decoded as openai-whisper does (timestamp tokens left out of the text).

        With timestamps, segments and ``resume_s`` come from the tokens as for openai-whisper's windows.
        """
        tokens = tokens[: tokens.index(self.eot)] if self.eot in tokens else tokens
        text = self._decode([t for t in tokens if t < self.timestamp_begin])
        language = "en"
        if program.language_index is not None:
            language = self.tokenizer.convert_ids_to_tokens(int(prompt[program.language_index]))[2:-2]
        if timestamps:
            tokenizer = SimpleNamespace(eot=self.eot, timestamp_begin=self.timestamp_begin, decode=self._decode)
            return window_transcript(tokens, tokenizer, text, language=language)
        return Transcript(text=text.strip(), language=language, tokens=len(tokens))

    def _decode(self, tokens: list[int]) -> str:
        return self.tokenizer.decode(tokens, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def describe(self) -> dict[str, Any]:
        return _describe(self, super().describe())

    def close(self) -> None:
        self._programs.clear()
        for name in ("params", "net"):
            if hasattr(self, name):
                delattr(self, name)


def _describe(a: JaxAdapter, info: dict[str, Any]) -> dict[str, Any]:
    """run.json's ``adapter_info`` of a JAX run: batch size, dtype, compile times per program, the features, XLA's
    flags, and once loaded the compiled programs, JAX's backend and devices."""
    info.update(
        batch_size=a._batch_size,
        dtype=a.settings["dtype"],
        max_new_tokens=a.max_new_tokens,
        compile_s=dict(a.compile_s),
        compile_s_total=round(sum(a.compile_s.values()), 3),
        features="openai-whisper log-mel (audio padded with 30 s of zeros, log-mel zero-padded to 3000 frames)",
        xla_flags=os.environ.get("XLA_FLAGS", ""),
    )
    if hasattr(a, "net"):
        import jax

        programs = {
            p.key: {"max_length": p.max_length, "prompt_tokens": p.prompt.tolist()} for p in a._programs.values()
        }
        info.update(programs=programs, jax_backend=jax.default_backend(), devices=[str(d) for d in jax.devices()])
    return info


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = JaxAdapter
