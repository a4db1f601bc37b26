"""``mlx``: Apple's mlx-whisper on MLX (Metal on Apple silicon, the CPU elsewhere via ``mlx[cpu]``).

The model is the converted folder from ``whisperbench.models`` (config.json + weights.safetensors),
passed to mlx-whisper as an existing local path, so it never calls the Hugging Face hub.

Options: ``dtype`` float32 (default, as the other adapters' baseline) or float16 (mlx-whisper's own
default, the usual choice on Apple silicon); ``quantization`` "" (none), q4 or q8 (affine, groups of
64, on top of ``dtype``). On the Linux CPU backend float16 is emulated: quantized float16 is about 30x
slower than float32 there, while quantized float32 runs at float32's speed or better.
mlx-whisper has no beam search (beam_size > 1 is refused).

``blas`` (Linux only): mlx[cpu] does its matrix products in the reference BLAS its wheel bundles
(netlib, one thread, no SIMD kernels), which makes it many times slower than the other CPU
implementations. ``blas=openblas`` loads the system OpenBLAS (Debian/Ubuntu: ``apt-get install
libopenblas0-pthread``) into the process before MLX, so MLX's ``cblas_sgemm`` binds to it; ``blas=PATH``
loads any CBLAS library. ``threads`` then sets OpenBLAS's thread count (the bundled BLAS has none).
The library a process's MLX binds to is fixed once MLX is imported, so a second MLX contender asking
for another BLAS in the same process is refused (run it with ``--isolate``). run.json records which
BLAS ran (``adapter_info.blas``).
MLX is native code: an abort inside it ends the run's process; the run store keeps the finished
examples, and running the same command again resumes after them (or use ``--isolate``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelError, OptionError
from ..types import Example, Transcript
from .base import SEAMS_FROM_DECODER, Adapter, DecodingOptions, transcript_from_whisper_result
from .options import Option
from .word_timing import APPEND_PUNCTUATIONS, PREPEND_PUNCTUATIONS, align_windows, last_word_end


class MLXAdapter(Adapter):
    """mlx-whisper: ``mlx_whisper.transcribe`` on the model converted to, or given in, MLX's format."""

    name = "mlx"
    prompting = "initial_prompt"  # mlx_whisper.transcribe(initial_prompt=), per example
    description = "mlx-whisper (MLX: Metal on Apple silicon, CPU on Linux), mlx_whisper.transcribe"
    requires = ("mlx_whisper", "mlx")
    extra = "mlx"
    distributions = ("mlx-whisper", "mlx", "mlx-cpu", "mlx-metal")
    long_form_algorithm = "mlx-whisper: sequential 30 s windows, seek by timestamps (openai-whisper's loop)"
    native_seams = SEAMS_FROM_DECODER  # its segments carry openai-whisper's ``seek``
    word_timing = (
        "mlx_whisper.timing.add_word_timestamps (DTW over the alignment heads) on each decoding window's "
        "tokens, after decoding as without word timing"
    )
    options = {
        "dtype": Option("float32", "MLX compute dtype (float16, float32)"),
        "quantization": Option("", "q4 or q8 (mlx.nn.quantize, groups of 64); empty: none"),
        "blas": Option("", "Linux: a system BLAS to load (openblas), in a child process"),
    }
    # off macOS the sweep runs MLX's CPU build on the system OpenBLAS (the wheel's own BLAS is ~20x slower)
    variants = {
        name: {**options, **({} if sys.platform == "darwin" else {"blas": "openblas"})}
        for name, options in (
            ("float32", {"dtype": "float32"}),
            ("float16", {"dtype": "float16"}),
            ("q8", {"quantization": "q8"}),
            ("q4", {"quantization": "q4"}),
        )
    }

    @classmethod
    def variant_refused(cls, name: str) -> str | None:
        blas = cls.variants[name].get("blas")
        try:
            blas and blas_library(blas)
        except OptionError as exc:
            return str(exc)
        return None

    def __init__(self, model: str, decoding: DecodingOptions | None = None):
        super().__init__(model, decoding)
        if self.decoding.beam_size > 1:
            raise OptionError(
                f"adapter mlx: mlx-whisper has no beam search (beam_size={self.decoding.beam_size}); use beam_size=1"
            )
        from ..models.mlx import variant_name

        try:
            self.variant = variant_name(self.settings["dtype"], self.settings["quantization"])
        except ModelError as exc:
            raise OptionError(f"adapter {exc}") from exc

    def load(self) -> None:
        self.blas = use_blas(self.settings["blas"], self.decoding.threads)  # before anything imports MLX
        import mlx.core as mx
        from mlx_whisper.transcribe import ModelHolder

        from ..models import converted, resolve_source

        self.multilingual = resolve_source(self.model).multilingual
        variant = self.variant if self.options_set_by_user("dtype", "quantization") else None
        folder = self.weights_path = converted(self.model, "mlx", variant)
        if not (folder / "config.json").is_file():  # mlx-whisper would take a missing path for a hub repo
            raise ModelError(f"adapter mlx: {folder} holds no config.json")
        self.path = str(folder.resolve())
        self.fp16 = self.settings["dtype"] == "float16"
        # mlx-whisper keeps one model per process, keyed by path; loading it here keeps load time out of RTFx
        ModelHolder.get_model(self.path, mx.float16 if self.fp16 else mx.float32)

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        import mlx_whisper

        d = self.decoding
        result = mlx_whisper.transcribe(
            audio,
            path_or_hf_repo=self.path,
            verbose=None,
            fp16=self.fp16,
            **d.whisper_transcribe_kwargs(self.multilingual, long_form, example),
        )
        if d.word_timestamps:
            assert audio is not None  # needs_audio: the harness decodes it
            self._add_words(result, audio)
        return transcript_from_whisper_result(result, long_form, d.word_timestamps)

    def _add_words(self, result: dict, audio: np.ndarray) -> None:
        """mlx-whisper's own word alignment on each decoding window's tokens (see adapters/word_timing.py)."""
        import mlx.core as mx
        from mlx_whisper.audio import N_FRAMES, N_SAMPLES, log_mel_spectrogram, pad_or_trim
        from mlx_whisper.timing import add_word_timestamps
        from mlx_whisper.tokenizer import get_tokenizer
        from mlx_whisper.transcribe import ModelHolder

        dtype = mx.float16 if self.fp16 else mx.float32
        model = ModelHolder.get_model(self.path, dtype)
        mel = log_mel_spectrogram(audio, n_mels=model.dims.n_mels, padding=N_SAMPLES)  # (frames, mels)
        tokenizer = get_tokenizer(
            model.is_multilingual,
            num_languages=model.num_languages,
            language=result.get("language"),
            task=self.decoding.task,
        )

        def align(window: list[dict], seek: int, frames: int, last_speech_s: float) -> float:
            segment = pad_or_trim(mel[seek : seek + frames], N_FRAMES, axis=-2).astype(dtype)
            add_word_timestamps(
                segments=window,
                model=model,
                tokenizer=tokenizer,
                mel=segment,
                num_frames=frames,
                prepend_punctuations=PREPEND_PUNCTUATIONS,
                append_punctuations=APPEND_PUNCTUATIONS,
                last_speech_timestamp=last_speech_s,
            )
            return last_word_end(window, last_speech_s)

        align_windows(result["segments"], mel.shape[-2] - N_FRAMES, N_FRAMES, align)

    def describe(self) -> dict[str, Any]:
        info = super().describe()
        if hasattr(self, "blas"):
            info["blas"] = self.blas
        return info

    def close(self) -> None:
        import mlx.core as mx
        from mlx_whisper.transcribe import ModelHolder

        if ModelHolder.model_path == getattr(self, "path", None):
            ModelHolder.model, ModelHolder.model_path = None, None
        mx.clear_cache()


BUNDLED = "bundled"
_blas_in_process: dict[str, Any] | None = None  # the BLAS this process's MLX binds to, once chosen


def use_blas(choice: str, threads: int) -> dict[str, Any]:
    """Make ``choice`` ("" for the wheel's own, "openblas", or a library path) the BLAS that MLX's CPU
    backend calls in this process, and describe it. Must run before ``mlx.core`` is first imported."""
    global _blas_in_process
    wanted = blas_library(choice) if choice else BUNDLED
    if _blas_in_process is None and "mlx.core" in sys.modules:
        _blas_in_process = {"library": BUNDLED}  # imported by someone else: bound to the bundled BLAS
    if _blas_in_process is not None:
        if _blas_in_process["library"] != wanted:
            raise ModelError(
                f"adapter mlx: MLX in this process already uses the {_blas_in_process['library']} BLAS "
                f"and cannot switch to {wanted} (a library is bound when MLX is imported): run this "
                "contender in its own process (--isolate)"
            )
    elif wanted == BUNDLED:
        _blas_in_process = {"library": BUNDLED}
    else:
        try:  # global scope: MLX's undefined cblas_* symbols resolve here before its bundled libblas
            lib = ctypes.CDLL(wanted, mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise OptionError(f"adapter mlx: blas={choice}: cannot load {wanted}: {exc}") from exc
        if not hasattr(lib, "cblas_sgemm"):
            raise OptionError(f"adapter mlx: blas={choice}: {wanted} has no cblas_sgemm, so it is not a CBLAS library")
        _blas_in_process = {"library": wanted, "handle": lib}
    info = {key: value for key, value in _blas_in_process.items() if key != "handle"}
    handle = _blas_in_process.get("handle")
    if handle is not None and hasattr(handle, "openblas_set_num_threads"):
        handle.openblas_set_num_threads(ctypes.c_int(threads))
        handle.openblas_get_config.restype = ctypes.c_char_p
        info.update(threads=handle.openblas_get_num_threads(), config=handle.openblas_get_config().decode())
    return info


def blas_library(choice: str) -> str:
    """The library ``blas=choice`` names ("openblas": the system's, found by the loader), or OptionError why not."""
    if sys.platform == "darwin":
        raise OptionError(
            "adapter mlx: the blas option is for mlx[cpu] on Linux; on macOS MLX uses Metal and Accelerate"
        )
    if choice == "openblas":
        found = ctypes.util.find_library("openblas")
        if not found:
            raise OptionError(
                "adapter mlx: blas=openblas: no OpenBLAS found on this system (Debian/Ubuntu: "
                "apt-get install libopenblas0-pthread), or pass blas=/path/to/libopenblas.so"
            )
        return found
    if "/" not in choice:
        raise OptionError(f"adapter mlx: blas={choice}: expected 'openblas' or a path to a CBLAS library")
    if not Path(choice).is_file():
        raise OptionError(f"adapter mlx: blas={choice}: no such file")
    return choice


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = MLXAdapter
