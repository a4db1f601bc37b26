"""Greedy Whisper decoding over a step decoder with an explicit key/value cache.

One loop serves the ANE-layout PyTorch model (``ane-pytorch``, any OS) and the exported Core ML
packages (``coreml``, macOS): both expose ``encode(inputs) -> outputs`` and
``decode(inputs) -> outputs`` over numpy arrays named as in :mod:`whisperbench.models.ane`, so the
host-side work a device app does (mel, masks, cache writes, token choice) is the same code for both.

It reproduces openai-whisper's decoding of one window at temperature 0: the log-mel of the clip
is padded with zeros (in log-mel space) to 30 s, the prompt is the SOT sequence (plus
``<|notimestamps|>`` unless decoding timestamps), the first sampled token may not be blank or EOT,
the non-speech and special tokens are suppressed, with timestamps openai-whisper's timestamp rules
apply, at most ``n_text_ctx // 2`` tokens are sampled, and a multilingual model with no language
given detects it from the first 30 s of the silence-padded mel, as openai-whisper does.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..errors import OptionError, WhisperbenchError
from .ane import MASK_VALUE
from .checkpoint import MAX_INITIAL_TIMESTAMP_INDEX, is_multilingual
from .timestamps import TimestampRules

SAMPLE_RATE = 16000
WINDOW_SAMPLES = 30 * SAMPLE_RATE


class StepModel(Protocol):
    """What the loop drives: an encoder call and a one-token decoder call on named numpy arrays."""

    dims: dict

    @property
    def float_dtype(self) -> type:
        """dtype of the float inputs the model takes (np.float32 or np.float16)."""

    def encode(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run the encoder on ``inputs`` (the mel) and return its outputs by name."""

    def decode(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Run one decoder step on ``inputs`` and return its outputs (logits, caches) by name."""


@dataclass
class GreedyResult:
    """One greedy decode: the text, its tokens, the language and the time each stage took."""

    text: str
    tokens: list[int]
    language: str | None
    timings: dict[str, float] = field(default_factory=dict)


def check_options(decoding, adapter: str) -> None:
    """Refuse decoding options the greedy loop does not implement (instead of silently ignoring them)."""
    refused = []
    if decoding.beam_size != 1:
        refused.append(f"beam_size={decoding.beam_size} (greedy only)")
    if decoding.temperature != 0.0 or decoding.temperature_fallback:
        refused.append("temperature > 0 / temperature_fallback (greedy at temperature 0 only)")
    if decoding.initial_prompt:
        refused.append("initial_prompt")
    for name in ("no_speech_threshold", "logprob_threshold", "compression_ratio_threshold"):
        if getattr(decoding, name) is not None:
            refused.append(name)
    if refused:
        raise OptionError(f"adapter {adapter}: not supported by its greedy KV-cache loop: {', '.join(refused)}")


class GreedyDecoder:
    """Transcribe one <= 30 s window with a :class:`StepModel`."""

    def __init__(self, model: StepModel, language: str | None = None, task: str = "transcribe"):
        from whisper.tokenizer import get_tokenizer

        self.model = model
        dims = model.dims
        self.n_mels, self.n_ctx = dims["n_mels"], dims["n_text_ctx"]
        self.cache_channels = dims["n_text_state"] * dims["n_text_layer"]
        self.multilingual = is_multilingual(dims["n_vocab"])
        self.num_languages = dims["n_vocab"] - 51765 - int(self.multilingual)
        self.task = task
        if language is None and not self.multilingual:
            language = "en"
        self.language = language
        self._get_tokenizer = lambda lang: get_tokenizer(
            self.multilingual, num_languages=self.num_languages, language=lang, task=task
        )
        try:
            self.tokenizer = self._get_tokenizer(language or "en")
        except ValueError as exc:
            raise OptionError(f"language {language!r}: {exc}") from exc
        tok = self.tokenizer
        self.suppress = sorted(
            set(tok.non_speech_tokens)
            | {tok.transcribe, tok.translate, tok.sot, tok.sot_prev, tok.sot_lm}
            | ({tok.no_speech} if tok.no_speech is not None else set())
        )
        self.suppress_at_start = tok.encode(" ") + [tok.eot]
        self.max_sampled = self.n_ctx // 2

    # --- mel ------------------------------------------------------------------------------------
    def mel_windows(self, audio: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(decoding input, language-detection input), each ``(n_mels, 3000)`` float32.

        The first is the clip's log-mel padded with zeros; the second is the first 30 s of the
        log-mel of the clip followed by 30 s of silence (what openai-whisper detects language on).
        """
        from whisper.audio import N_FRAMES, log_mel_spectrogram, pad_or_trim

        if audio.ndim != 1 or len(audio) == 0:
            raise WhisperbenchError(f"expected a non-empty mono waveform, got shape {audio.shape}")
        if len(audio) > WINDOW_SAMPLES:
            raise WhisperbenchError(
                f"audio of {len(audio) / SAMPLE_RATE:.1f} s: this decoder transcribes windows of at most 30 s "
                "(long-form audio goes through the harness's chunked strategy)"
            )
        mel = log_mel_spectrogram(np.asarray(audio, dtype=np.float32), self.n_mels, padding=WINDOW_SAMPLES)
        content_frames = mel.shape[-1] - N_FRAMES
        window = pad_or_trim(mel[:, :content_frames], N_FRAMES)
        return window.numpy(), pad_or_trim(mel, N_FRAMES).numpy()

    def encode(self, mel: np.ndarray) -> dict[str, np.ndarray]:
        """Encode one 30 s log-mel window (the encoder's outputs, reused by every decoder step)."""
        return self.model.encode({"melspectrogram_features": mel[None, :, None, :].astype(self.model.float_dtype)})

    # --- decoding -------------------------------------------------------------------------------
    def _new_cache(self) -> dict[str, np.ndarray]:
        shape = (1, self.cache_channels, 1, self.n_ctx)
        return {
            "key_cache": np.zeros(shape, self.model.float_dtype),
            "value_cache": np.zeros(shape, self.model.float_dtype),
        }

    def _step(self, token: int, position: int, cache: dict, encoded: dict) -> np.ndarray:
        """Feed ``token`` at ``position``; write its keys/values into ``cache``; return float32 logits."""
        dtype = self.model.float_dtype
        update_mask = np.zeros((1, self.n_ctx), dtype)
        update_mask[0, position] = 1
        padding_mask = np.full((1, self.n_ctx), MASK_VALUE, dtype)
        padding_mask[0, : position + 1] = 0
        out = self.model.decode(
            {
                "input_ids": np.array([token], np.int32),
                "cache_length": np.array([position], np.int32),
                "key_cache": cache["key_cache"],
                "value_cache": cache["value_cache"],
                "kv_cache_update_mask": update_mask,
                "decoder_key_padding_mask": padding_mask,
                "cross_key_cache": encoded["cross_key_cache"],
                "cross_value_cache": encoded["cross_value_cache"],
            }
        )
        cache["key_cache"][..., position] = out["key_cache_updates"][..., 0]
        cache["value_cache"][..., position] = out["value_cache_updates"][..., 0]
        return np.asarray(out["logits"], dtype=np.float32).reshape(-1)

    def detect_language(self, encoded: dict) -> str:
        """The language Whisper's language token says (the most likely one after start-of-transcript)."""
        tok = self.tokenizer
        logits = self._step(tok.sot, 0, self._new_cache(), encoded)
        languages = np.array(tok.all_language_tokens)
        best = int(languages[np.argmax(logits[languages])])
        return tok.decode([best]).strip("<|>")

    def _apply_timestamp_rules(self, logits: np.ndarray, sampled: list[int], tokenizer: Any) -> None:
        """openai-whisper's timestamp rules (:mod:`whisperbench.models.timestamps`), in place."""
        rules = TimestampRules(0, tokenizer.timestamp_begin, tokenizer.eot, MAX_INITIAL_TIMESTAMP_INDEX)
        history = np.array([sampled + [0, 0]], dtype=np.int64)  # two pads: the rules look two tokens back
        with np.errstate(divide="ignore", invalid="ignore"):
            logits[:] = rules.apply(np, history, logits[None], len(sampled))[0]

    def decode_tokens(self, encoded: dict, tokenizer, timestamps: bool = False) -> tuple[list[int], dict[str, float]]:
        """Greedy tokens (without the prompt and EOT) for one encoded window."""
        cache = self._new_cache()
        prompt = list(tokenizer.sot_sequence) + ([] if timestamps else [tokenizer.no_timestamps])
        sampled: list[int] = []
        start = time.perf_counter()
        logits = np.empty(0)
        for position, token in enumerate(prompt):
            logits = self._step(token, position, cache, encoded)
        position = len(prompt)
        while True:
            if not sampled:
                logits[self.suppress_at_start] = -np.inf
            logits[self.suppress] = -np.inf
            if timestamps:
                self._apply_timestamp_rules(logits, sampled, tokenizer)
            token = int(np.argmax(logits))
            if token == tokenizer.eot:
                break
            sampled.append(token)
            if len(sampled) >= self.max_sampled or position >= self.n_ctx:
                break
            logits = self._step(token, position, cache, encoded)
            position += 1
        return sampled, {"decoder_s": time.perf_counter() - start, "decoder_steps": float(position)}

    def transcribe(self, audio: np.ndarray, timestamps: bool = False, language: str | None = None) -> GreedyResult:
        """Text of one <= 30 s clip; with ``timestamps`` the window is decoded with timestamp tokens
        (as openai-whisper decodes long-form windows) and the text leaves them out. ``language`` forces this
        clip's language (a multilingual model; else the decoder's own setting holds)."""
        timings: dict[str, float] = {}
        start = time.perf_counter()
        mel, detection_mel = self.mel_windows(audio)
        timings["mel_s"] = time.perf_counter() - start
        start = time.perf_counter()
        encoded = self.encode(mel)
        timings["encoder_s"] = time.perf_counter() - start
        if language is not None and self.multilingual:
            tokenizer = self._get_tokenizer(language)
        else:
            language, tokenizer = self.language, self.tokenizer
        if language is None:
            start = time.perf_counter()
            language = self.detect_language(self.encode(detection_mel))
            tokenizer = self._get_tokenizer(language)
            timings["language_s"] = time.perf_counter() - start
        tokens, decode_timings = self.decode_tokens(encoded, tokenizer, timestamps)
        timings.update(decode_timings)
        text = tokenizer.decode([t for t in tokens if t < tokenizer.eot])
        return GreedyResult(text=text, tokens=tokens, language=language, timings=timings)
