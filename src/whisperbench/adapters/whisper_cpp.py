"""``whisper-cpp``: whisper.cpp on the ggml file written from the shared checkpoint, in a worker process.

Two bindings (option ``backend``): ``pywhispercpp`` (whisper.cpp 1.8.x) and ``whisper-cpp-python``
(the package the product names; it vendors whisper.cpp 1.4.1, has no ``no_timestamps`` parameter,
and reads ggml quantization format 1 only). Both are driven through their C-level API on a local
file path, so nothing is ever downloaded.

The native model runs in a worker subprocess: a crash (segfault, abort) fails the example that
caused it with a clear error, and a new worker is started for the next one. whisper.cpp's log goes
to a file (what it logged during a fatal request is quoted in the error). The worker reports its
own peak RSS (``VmHWM``, see ``peak_rss_mb``) with every reply; ``describe()`` records the maximum as
``worker_peak_rss_mb``, since the harness process never holds the model.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import AdapterUnavailable, ModelError, OptionError
from ..process.child import ChildProcess, RemoteError, WorkerCrashed
from ..types import Example, Segment, Transcript, Word
from .base import Adapter
from .options import Option
from .word_timing import dtw_token_spans, words_from_tokens

#: backend -> (import name, PyPI distribution, install hint)
BACKENDS = {
    "pywhispercpp": ("pywhispercpp", "pywhispercpp", "pip install pywhispercpp"),
    "whisper-cpp-python": (
        "whisper_cpp_python",
        "whisper-cpp-python",
        "CMAKE_POLICY_VERSION_MINIMUM=3.5 pip install whisper-cpp-python==0.2.0",
    ),
}
#: ggml types the harness writes for whisper.cpp (f32 is left out: pywhispercpp's build aborts on it)
QUANTIZATIONS = ("f16", "q8_0", "q5_1", "q5_0", "q4_1", "q4_0", "q6_k", "q5_k", "q4_k", "q3_k", "q2_k")
#: the types whisper.cpp 1.4 (whisper-cpp-python) reads: quantization format 1
LEGACY_QUANTIZATIONS = ("f16", "q8_0", "q5_0")
#: whisper.cpp vendored by whisper-cpp-python releases (its library predates whisper_version())
_VENDORED_WHISPER_CPP = {"0.2.0": "1.4.1"}
_NEVER = 1e9  # a log-prob threshold no average log-prob crosses (finite, so run.json stays valid JSON)
#: (n_text_layer, n_text_state) -> whisper.cpp's alignment-head preset (``WHISPER_AHEADS_*``, openai-whisper's heads
#: of that size; ``_EN`` added for an English-only vocabulary of 51,864 tokens)
_AHEADS = {
    (4, 384): "TINY",
    (6, 512): "BASE",
    (12, 768): "SMALL",
    (24, 1024): "MEDIUM",
    (32, 1280): "LARGE_V2",
    (4, 1280): "LARGE_V3_TURBO",
}
_ENGLISH_VOCABULARY = 51864


def dtw_preset(hparams: dict[str, int]) -> str:
    """whisper.cpp's alignment-head preset for a model of this shape: openai-whisper's heads of the same size
    (large with the 51,866-token vocabulary: v3), else ``N_TOP_MOST`` (whisper.cpp's fallback: every head of the
    top layers), for an architecture no release has.

    >>> dtw_preset({"n_text_layer": 4, "n_text_state": 384, "n_vocab": 51864}), dtw_preset({"n_text_layer": 3,
    ...     "n_text_state": 384, "n_vocab": 51865})
    ('TINY_EN', 'N_TOP_MOST')
    """
    name = _AHEADS.get((hparams["n_text_layer"], hparams["n_text_state"]))
    if name is None:
        return "N_TOP_MOST"
    if name == "LARGE_V2" and hparams["n_vocab"] >= 51866:
        return "LARGE_V3"
    english = hparams["n_vocab"] == _ENGLISH_VOCABULARY and name in ("TINY", "BASE", "SMALL", "MEDIUM")
    return name + "_EN" if english else name


def _route(variant: str, converted: bool) -> str:
    """How the ggml file was made, in words (run.json ``adapter_info.ggml_route``)."""
    if not converted or not variant:
        return "as given, or converted to f16" if not converted else "converted to f16"
    if variant.endswith("+f16"):
        return "weights rounded to float16, then quantized (whisper.cpp's convert + quantize route)"
    return "quantized from the float32 weights (whisper.cpp's route rounds to float16 first: -o quantize_from=f16)"


class WhisperCppAdapter(Adapter):
    """whisper.cpp through pywhispercpp or whisper-cpp-python, on a ggml file, in a worker process."""

    name = "whisper-cpp"
    prompting = "initial_prompt"  # whisper_full_params.initial_prompt, set on each call (the example's prompt)
    description = "whisper.cpp (pywhispercpp or whisper-cpp-python) on a ggml file, in a worker process"
    requires = ("pywhispercpp",)  # the default backend; missing() accepts either binding
    extra = "whisper-cpp"
    distributions = ("pywhispercpp", "whisper-cpp-python")
    long_form_algorithm = "whisper.cpp whisper_full: sequential 30 s windows, seek by timestamps"
    self_isolating = True
    cpu_in_process = False  # whisper.cpp computes in the worker process, which reports its CPU seconds
    options = {
        "backend": Option("pywhispercpp", "Python binding (pywhispercpp: whisper.cpp 1.7; whisper-cpp-python: 1.4.1)"),
        "quantization": Option("f16", "ggml type to convert to (a ggml file given as --model runs as it is)"),
        "quantize_from": Option(
            "f32",
            "what a quantized type is made from: the float32 weights (f32), or "
            "them rounded to float16 first (f16: whisper.cpp's convert-then-"
            "quantize route, its bytes)",
            choices=("f32", "f16"),
        ),
        "flash_attn": Option(
            True,
            "pywhispercpp: whisper.cpp's flash attention (its default: on); word timing "
            "turns it off, as whisper.cpp's DTW needs, which can change the text: "
            "compare with -o flash_attn=false",
        ),
        "abort_on": Option("", "fault injection: abort the native worker on this example id"),
    }
    variants = {name: {"quantization": name} for name in QUANTIZATIONS}

    def __init__(self, model, decoding=None):
        super().__init__(model, decoding)
        backend, quantization = self.settings["backend"], self.settings["quantization"]
        if backend not in BACKENDS:
            raise OptionError(f"adapter whisper-cpp: backend {backend!r} is not one of {', '.join(BACKENDS)}")
        allowed = LEGACY_QUANTIZATIONS if backend == "whisper-cpp-python" else QUANTIZATIONS
        if quantization not in allowed:
            raise OptionError(
                f"adapter whisper-cpp: quantization {quantization!r} is not one of "
                f"{', '.join(allowed)}{' (backend ' + backend + ')' if backend != 'pywhispercpp' else ''}"
            )
        module, _, hint = BACKENDS[backend]
        if importlib.util.find_spec(module) is None:
            raise AdapterUnavailable(f"adapter whisper-cpp: backend {backend} is not installed: {hint}")
        self.backend = backend
        if (
            self.decoding.word_timestamps
            and backend == "pywhispercpp"
            and self.options_set_by_user("flash_attn")
            and self.settings["flash_attn"]
        ):
            raise OptionError(
                "adapter whisper-cpp: word timing uses whisper.cpp's DTW, which runs without flash "
                "attention: drop -o flash_attn=true (or --word-timestamps)"
            )
        # whisper.cpp 1.4 reads ggml quantization format 1, later releases format 2
        legacy = "-qnt1" if backend == "whisper-cpp-python" else ""
        route = "+f16" if self.settings["quantize_from"] == "f16" else ""
        self.variant = "" if quantization == "f16" else quantization + legacy + route
        self.dtw: str | None = None  # the alignment-head preset of DTW word times (set by load)
        self._worker: _Worker | None = None
        self._worker_info: dict[str, Any] = {}
        self._peak_rss_mb = 0.0
        self._restarts = 0

    @classmethod
    def missing(cls) -> list[str]:
        if any(importlib.util.find_spec(module) for module, _, _ in BACKENDS.values()):
            return []
        return ["pywhispercpp"]

    def load(self) -> None:
        from ..models import converted, resolve_source
        from ..models.ggml_format import validate_ggml_header

        self.multilingual = resolve_source(self.model).multilingual
        variant = self.variant if self.options_set_by_user("quantization") else None
        self.ggml_path = self.weights_path = converted(self.model, "ggml", variant)
        header = validate_ggml_header(self.ggml_path)
        reads = 1 if self.backend == "whisper-cpp-python" else 2
        if header.quantized and (header.qnt_version >= 2) != (reads == 2):
            raise ModelError(
                f"{self.ggml_path}: ggml quantization format {header.qnt_version} cannot be read by "
                f"backend {self.backend} (it reads format {reads})"
            )
        self.params = whisper_params(self.decoding, self.multilingual, self.backend, header.hparams["n_text_ctx"])
        words = self.decoding.word_timestamps and self.backend == "pywhispercpp"
        self.dtw = dtw_preset(header.hparams) if words else None
        self._logs = Path(tempfile.mkdtemp(prefix="whisperbench-whisper-cpp-"))
        self._start()

    def _start(self) -> None:
        config = {
            "backend": self.backend,
            "path": str(self.ggml_path),
            "params": self.params,
            "beam": self.decoding.beam_size > 1,
            "abort_on": self.settings["abort_on"],
            "dtw": self.dtw,
            "flash_attn": self.flash_attn,
        }
        self._worker = _Worker(config, self._logs / f"worker-{self._restarts}.log")
        self._worker_info = self._worker.info

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        if self._worker is None:  # the last restart failed: try again
            self._start()
        assert self._worker is not None
        no_timestamps = self.decoding.timestamps_off(long_form)
        language = self.decoding.language_for(self.multilingual, example) or "auto"  # per example: language=dataset
        prompt = self.decoding.prompt_for(example)  # per example: --prompt-from-keywords
        try:
            reply = self._worker.call(
                "transcribe", audio, example.id, no_timestamps, language, prompt, timeout_s=self.call_timeout_s
            )
        except RemoteError as exc:
            raise RuntimeError(f"whisper.cpp ({self.backend}): {exc}") from None
        except WorkerCrashed as crash:
            self._peak_rss_mb = max(self._peak_rss_mb, self._worker.peak_rss_mb)
            self._worker, self._restarts = None, self._restarts + 1
            try:
                self._start()
                note = "a new worker was started for the next example"
            except Exception as exc:  # reported again by the next example's call
                note = f"restarting the worker failed: {exc}"
            raise type(crash)(f"{crash}; {note}") from None  # a timeout stays a timeout (never retried)
        segments = [Segment(t0, t1, text) for t0, t1, text in reply["segments"]]
        words = token_words(reply["tokens"], self.dtw is not None) if reply.get("tokens") is not None else None
        return Transcript(
            text="".join(s.text for s in segments).strip(),
            segments=segments,
            language=reply["language"],
            words=words,
            tokens=reply.get("decoded"),
            cpu_s=self._worker.last_cpu_s,  # the worker's CPU, whisper.cpp's native threads included
        )

    @property
    def flash_attn(self) -> bool:
        """Whether whisper.cpp runs with flash attention: as asked (its default: on), off under DTW word timing."""
        return bool(self.settings["flash_attn"]) and self.dtw is None

    @property
    def word_timing(self) -> str | None:  # type: ignore[override]
        """whisper.cpp 1.8 (pywhispercpp): its DTW; 1.4.1 (whisper-cpp-python): its token timestamps."""
        return WORD_TIMING[self.backend]

    def describe(self) -> dict[str, Any]:
        return _describe(self, super().describe())

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None
        if getattr(self, "_logs", None):
            shutil.rmtree(self._logs, ignore_errors=True)


def _describe(a: WhisperCppAdapter, info: dict[str, Any]) -> dict[str, Any]:
    """run.json's ``adapter_info`` of a whisper.cpp run: the binding, whisper.cpp's version, the ggml file and its
    route, the parameters, the worker's peak memory and restarts, and what deviates from a plain run."""
    from ..process.host import package_versions

    distribution = BACKENDS[a.backend][1]
    info["versions"] = package_versions((distribution,))
    info["backend"] = a.backend
    if a._worker is not None:
        try:
            a._worker.call("stats")
            a._peak_rss_mb = max(a._peak_rss_mb, a._worker.peak_rss_mb)
        except WorkerCrashed:
            a._worker = None
    if a._worker_info:
        info["versions"]["whisper.cpp"] = a._worker_info["whisper_cpp"]
        info["whisper_cpp"] = a._worker_info
        info["ggml_file"] = str(a.ggml_path)
        info["ggml_variant"] = (a.variant or "f16").partition("+")[0]
        info["ggml_route"] = _route(a.variant, a.options_set_by_user("quantization"))
        info["whisper_params"] = a.params
        info["worker_peak_rss_mb"] = a._peak_rss_mb
        info["worker_restarts"] = a._restarts
        if a.dtw is not None:
            info["dtw_aheads_preset"] = a.dtw
        if a.dtw is not None and a.settings["flash_attn"]:
            info.setdefault("deviations", []).append(
                "flash attention off for word timing (whisper.cpp's DTW needs it): the text is that of "
                "-o flash_attn=false, which can differ from a run with flash attention"
            )
    if a.backend == "whisper-cpp-python":
        info["deviations"] = ["whisper.cpp 1.4.1 has no no_timestamps: short-form is decoded with timestamps"]
    return info


#: how each binding gives word times (run.json ``adapter_info.word_timing``)
WORD_TIMING = {
    "pywhispercpp": "whisper.cpp's DTW token timestamps (dtw_token_timestamps, the alignment-head preset of the "
    "model's size), inside whisper_full as decoded without word timing (flash attention off)",
    "whisper-cpp-python": "whisper.cpp 1.4.1's token timestamps (timestamp-token probabilities; it has no DTW); "
    "short-form is decoded with timestamps by this binding in any case",
}


def token_words(tokens: list[tuple[str, float, float, float]], dtw: bool) -> list[Word]:
    """Words from a call's text tokens ``(text, t0, t1, t_dtw)`` in seconds: with DTW (pywhispercpp) a token spans
    the previous token's DTW time to its own (``t_dtw`` is its end); whisper.cpp 1.4.1's token timestamps
    (whisper-cpp-python, timestamp-token probabilities) are ``t0``..``t1``. A word's bytes (kept as surrogate
    escapes per token) are decoded once its tokens are joined: whole characters.

    >>> token_words([(" And", -1.0, -1.0, 0.76), (" so", -1.0, -1.0, 1.06)], dtw=True)
    [Word(word='And', start=0.0, end=0.76), Word(word='so', start=0.76, end=1.06)]
    """
    spans = dtw_token_spans([t_dtw for *_, t_dtw in tokens]) if dtw else [(t0, t1) for _, t0, t1, _ in tokens]
    words = words_from_tokens((text, start, end) for (text, *_), (start, end) in zip(tokens, spans))
    return [Word(w.word.encode("utf-8", "surrogateescape").decode("utf-8", "replace"), w.start, w.end) for w in words]


def whisper_params(d, multilingual: bool, backend: str, n_text_ctx: int = 448) -> dict[str, Any]:
    """The harness's decoding options as ``whisper_full_params`` fields (no_timestamps is set per call).

    Greedy unless beam_size > 1; no fallback unless asked (temperature_inc 0); non-speech tokens
    suppressed as openai-whisper's default ``suppress_tokens="-1"`` does. ``no_context`` is always on:
    whisper.cpp otherwise prompts each call with the previous call's text, i.e. the previous example.
    Within one call it conditions on earlier windows, as openai-whisper does, on the last
    ``n_text_ctx // 2 - 1`` tokens; ``condition_on_previous_text=False`` sets that to 0 (which in
    whisper.cpp also drops an initial prompt). whisper.cpp drops a window as silence only if
    no_speech_prob > no_speech_thold *and* avg logprob < logprob_thold; thresholds left at None are
    set so that the corresponding heuristic never fires.
    """
    no_speech = d.no_speech_threshold if d.no_speech_threshold is not None else 2.0  # a probability never exceeds it
    if d.logprob_threshold is not None:
        logprob = d.logprob_threshold
    else:  # no log-prob fallback; a set no_speech threshold alone decides, as in openai-whisper
        logprob = _NEVER if d.no_speech_threshold is not None and not d.temperature_fallback else -_NEVER
    params: dict[str, Any] = {
        "n_threads": d.threads,
        "translate": d.task == "translate",
        "no_context": True,
        "n_max_text_ctx": n_text_ctx // 2 - 1 if d.condition_on_previous_text else 0,
        "language": d.language_for(multilingual) or "auto",
        "initial_prompt": d.initial_prompt,
        "temperature": d.temperature,
        "temperature_inc": 0.2 if d.temperature_fallback else 0.0,
        "entropy_thold": 2.4 if d.compression_ratio_threshold is not None else 0.0,  # whisper.cpp's counterpart
        "logprob_thold": logprob,
        "no_speech_thold": no_speech,
        "suppress_blank": True,
        "max_initial_ts": 1.0,
        "greedy": {"best_of": 1},
        "beam_search": {"beam_size": d.beam_size if d.beam_size > 1 else -1, "patience": -1.0},
        "print_progress": False,
        "print_realtime": False,
        "print_timestamps": False,
        "print_special": False,
    }
    params["suppress_nst" if backend == "pywhispercpp" else "suppress_non_speech_tokens"] = True
    # word times: whisper.cpp 1.8's DTW is a context parameter (``dtw``, set when the worker loads); 1.4.1 has only
    # token timestamps from the timestamp tokens' probabilities, which it always decodes (no no_timestamps)
    params["token_timestamps"] = d.word_timestamps and backend != "pywhispercpp"
    return params


# --------------------------------------------------------------------------------- worker side


class _Worker(ChildProcess):
    """The worker process holding one loaded whisper.cpp context (see harness.isolation)."""

    def __init__(self, config: dict, log_path: Path):
        try:
            super().__init__(f"{__name__}:_Engine", config, log_path, label="whisper.cpp worker")
        except RemoteError as exc:
            raise ModelError(f"whisper.cpp ({config['backend']}) could not load {config['path']}: {exc}") from None


class _Engine:
    """Lives in the worker: one backend, plus the ``abort_on`` fault injection used by the tests."""

    def __init__(self, config: dict):
        self.engine = (_PyWhisperCpp if config["backend"] == "pywhispercpp" else _WhisperCppPython)(config)
        self.abort_on = config["abort_on"]
        self.timed = bool(config.get("dtw") or config["params"].get("token_timestamps"))  # word timing asked for

    def info(self) -> dict:
        return self.engine.info()

    def transcribe(
        self,
        audio: np.ndarray,
        example_id: str,
        no_timestamps: bool,
        language: str = "auto",
        prompt: str | None = None,
    ) -> dict:
        """One call of whisper_full on ``audio`` with this example's language and vocabulary prompt (None: none)."""
        if self.abort_on and example_id == self.abort_on:
            os.abort()  # a native-style crash
        segments, detected = self.engine.transcribe(
            np.ascontiguousarray(audio, dtype=np.float32), no_timestamps, language, prompt
        )
        tokens = self.engine.tokens() if self.timed else None
        return {"segments": segments, "language": detected, "tokens": tokens, "decoded": self.engine.decoded()}


def _loaded_library_version(fragment: str) -> str | None:
    """``whisper_version()`` of the libwhisper mapped into this process (None if it lacks one)."""
    import ctypes

    with open("/proc/self/maps", encoding="utf-8") as maps:
        paths = {line.split()[-1] for line in maps if fragment in line and ".so" in line}
    for path in sorted(paths):
        library = ctypes.CDLL(path)
        if hasattr(library, "whisper_version"):
            library.whisper_version.restype = ctypes.c_char_p
            return library.whisper_version().decode()
    return None


class _PyWhisperCpp:
    """pywhispercpp's C-level binding (``_pywhispercpp``): context from a file path, whisper_full."""

    def __init__(self, config: dict):
        import _pywhispercpp as pw

        self.pw = pw
        errors: list[str] = []

        def log(level: int, text: str) -> None:
            sys.stderr.write(text)
            if level == 4:  # GGML_LOG_LEVEL_ERROR
                errors.append(text.strip())

        pw.whisper_log_set(log)  # a failed load still returns a context object, around a null pointer
        context = pw.whisper_context_default_params()
        context.flash_attn = config.get("flash_attn", context.flash_attn)
        if config.get("dtw"):  # word times: DTW over the alignment heads (whisper.cpp runs it without flash attention)
            context.dtw_token_timestamps = True
            context.dtw_aheads_preset = getattr(pw, f"WHISPER_AHEADS_{config['dtw']}")
        self.ctx = pw.whisper_init_from_file_with_params(config["path"], context)
        self.flash_attn = bool(context.flash_attn)
        pw.whisper_log_set(None)
        if errors:
            raise ModelError(f"{config['path']}: whisper.cpp: {'; '.join(errors)}")
        strategy = pw.whisper_sampling_strategy
        self.params = pw.whisper_full_default_params(
            strategy.WHISPER_SAMPLING_BEAM_SEARCH if config["beam"] else strategy.WHISPER_SAMPLING_GREEDY
        )
        for key, value in config["params"].items():
            setattr(self.params, key, "" if value is None and key == "initial_prompt" else value)

    def info(self) -> dict:
        from importlib.metadata import version

        return {
            "backend": "pywhispercpp",
            "pywhispercpp": version("pywhispercpp"),
            "whisper_cpp": _loaded_library_version("libwhisper") or "unknown",
            "system_info": self.pw.whisper_print_system_info().strip(),
            "flash_attn": self.flash_attn,
        }

    def transcribe(
        self, audio: np.ndarray, no_timestamps: bool, language: str, prompt: str | None = None
    ) -> tuple[list, str | None]:
        pw = self.pw
        self.params.no_timestamps = no_timestamps
        self.params.language = language
        self.params.initial_prompt = prompt or ""  # the binding keeps its own copy
        status = pw.whisper_full(self.ctx, self.params, audio, audio.size)
        if status != 0:
            raise RuntimeError(f"whisper_full returned {status}")
        ctx = self.ctx
        segments = [
            (
                pw.whisper_full_get_segment_t0(ctx, i) / 100,
                pw.whisper_full_get_segment_t1(ctx, i) / 100,
                pw.whisper_full_get_segment_text(ctx, i).decode("utf-8", "replace"),
            )
            for i in range(pw.whisper_full_n_segments(ctx))
        ]
        return segments, pw.whisper_lang_str(pw.whisper_full_lang_id(ctx))

    def decoded(self) -> int:
        """How many tokens the last call decoded (:func:`_decoded_count`)."""
        pw = self.pw
        ids = (pw.whisper_full_n_segments, pw.whisper_full_n_tokens, pw.whisper_full_get_token_id)
        return _decoded_count(self.ctx, pw.whisper_token_eot(self.ctx), pw.whisper_token_beg(self.ctx), *ids)

    def tokens(self) -> list[tuple[str, float, float, float]]:
        """The last call's text tokens ``(text, t0 s, t1 s, t_dtw s)`` (special and timestamp tokens left out)."""
        pw, ctx = self.pw, self.ctx

        def token_bytes(context, i: int, j: int) -> bytes:  # its get_token_text decodes, and fails mid-character
            return pw.whisper_token_to_bytes(context, pw.whisper_full_get_token_id(context, i, j))

        return _text_tokens(
            ctx,
            pw.whisper_token_eot(ctx),
            pw.whisper_full_n_segments,
            pw.whisper_full_n_tokens,
            pw.whisper_full_get_token_data,
            token_bytes,
        )


class _WhisperCppPython:
    """whisper-cpp-python's ctypes module (``whisper_cpp_python.whisper_cpp``, whisper.cpp 1.4.1).

    Its ``Whisper.transcribe`` reads a file and defaults to temperature 0.8; the C API is called
    with the harness's parameters instead (temperature 0 unless set).
    """

    def __init__(self, config: dict):
        import ctypes

        from whisper_cpp_python import whisper_cpp as wc

        self.wc, self.ctypes = wc, ctypes
        handle = wc.whisper_init_from_file(config["path"].encode())
        if not handle:
            raise ModelError(f"{config['path']}: whisper.cpp failed to load the model (see its log)")
        self.ctx = ctypes.c_void_p(handle)
        self.params = wc.whisper_full_default_params(1 if config["beam"] else 0)
        for key, value in config["params"].items():
            if isinstance(value, dict):
                for field, inner in value.items():
                    setattr(getattr(self.params, key), field, inner)
            elif isinstance(value, str):
                setattr(self.params, key, value.encode())
            else:
                setattr(self.params, key, value)

    def info(self) -> dict:
        from importlib.metadata import version

        package = version("whisper-cpp-python")
        return {
            "backend": "whisper-cpp-python",
            "whisper-cpp-python": package,
            "whisper_cpp": _loaded_library_version("whisper_cpp_python")
            or _VENDORED_WHISPER_CPP.get(package, "unknown"),
            "system_info": self.wc.whisper_print_system_info().decode().strip(),
        }

    def transcribe(
        self, audio: np.ndarray, no_timestamps: bool, language: str, prompt: str | None = None
    ) -> tuple[list, str | None]:
        wc, ctx = self.wc, self.ctx
        self._language = language.encode()  # kept alive while whisper_full reads it
        self.params.language = self._language
        self._prompt = prompt.encode() if prompt else None  # likewise (None: no initial prompt, whisper.cpp's NULL)
        self.params.initial_prompt = self._prompt
        samples = audio.ctypes.data_as(self.ctypes.POINTER(self.ctypes.c_float))
        status = wc.whisper_full(ctx, self.params, samples, len(audio))
        if status != 0:
            raise RuntimeError(f"whisper_full returned {status}")
        segments = [
            (
                wc.whisper_full_get_segment_t0(ctx, i) / 100,
                wc.whisper_full_get_segment_t1(ctx, i) / 100,
                wc.whisper_full_get_segment_text(ctx, i).decode("utf-8", "replace"),
            )
            for i in range(wc.whisper_full_n_segments(ctx))
        ]
        return segments, wc.whisper_lang_str(wc.whisper_full_lang_id(ctx)).decode()

    def decoded(self) -> int:
        """How many tokens the last call decoded (:func:`_decoded_count`)."""
        wc = self.wc
        ids = (wc.whisper_full_n_segments, wc.whisper_full_n_tokens, wc.whisper_full_get_token_id)
        return _decoded_count(self.ctx, wc.whisper_token_eot(self.ctx), wc.whisper_token_beg(self.ctx), *ids)

    def tokens(self) -> list[tuple[str, float, float, float]]:
        """The last call's text tokens ``(text, t0 s, t1 s, -0.01)`` (whisper.cpp 1.4.1 has no DTW time)."""
        wc, ctx = self.wc, self.ctx
        return _text_tokens(
            ctx,
            wc.whisper_token_eot(ctx),
            wc.whisper_full_n_segments,
            wc.whisper_full_n_tokens,
            wc.whisper_full_get_token_data,
            wc.whisper_full_get_token_text,
        )


def _decoded_count(ctx, eot: int, beg: int, n_segments, n_tokens, token_id) -> int:
    """The tokens of every segment that the decoder produced: text and timestamp tokens (whisper.cpp keeps the
    special tokens between end-of-text and the first timestamp, such as ``[_BEG_]``, in its segments: not counted)."""
    ids = (token_id(ctx, i, j) for i in range(n_segments(ctx)) for j in range(n_tokens(ctx, i)))
    return sum(1 for token in ids if token < eot or token >= beg)


def _text_tokens(ctx, eot: int, n_segments, n_tokens, token_data, token_text) -> list[tuple[str, float, float, float]]:
    """Every segment's text tokens ``(text, t0, t1, t_dtw)``, times in seconds (whisper.cpp counts 10 ms steps;
    a binding without ``t_dtw`` gives -0.01). A token may hold part of a character (CJK): its bytes are kept as
    surrogate escapes, which the adapter turns back into bytes once a word's tokens are joined."""
    tokens = []
    for i in range(n_segments(ctx)):
        for j in range(n_tokens(ctx, i)):
            data = token_data(ctx, i, j)
            if data.id >= eot:
                continue
            text = token_text(ctx, i, j)
            text = text.decode("utf-8", "surrogateescape") if isinstance(text, bytes) else text
            tokens.append((text, data.t0 / 100, data.t1 / 100, getattr(data, "t_dtw", -1) / 100))
    return tokens


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = WhisperCppAdapter
