"""``openai-api``: the OpenAI transcription API (the product's reference) or any compatible endpoint.

Built on the official ``openai`` client: ``base_url`` points it at any OpenAI-compatible server
(whisper.cpp's server, faster-whisper-server, vLLM, Groq …). The API key is read from
``OPENAI_API_KEY`` only and never stored. Retries with exponential backoff on 408/409/429/5xx,
timeouts and dropped connections (honouring ``Retry-After``) are the client's own
(``max_retries``, ``timeout_s``); after the last one the example is recorded as failed.

Audio is uploaded as 16 kHz mono 16-bit FLAC (lossless for the decoded samples). A file over
``max_upload_mb`` (the API's limit is 25 MB) is split at the quietest 0.1 s near each limit and the
parts' texts are joined; the prediction records what was done. Results are cached on disk by
(audio sha256, endpoint, model, request options): re-evaluating a reference costs no requests
(``whisperbench run --refresh`` bypasses the cache).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..core.json_files import write_json_atomic
from ..core.ranges import Range
from ..core.redact import redact_text, redact_url
from ..datasets.audio import SAMPLE_RATE
from ..errors import OptionError, WhisperbenchError
from ..types import Example, Segment, Transcript, Word
from .base import Adapter
from .options import Option

API_KEY_ENV = "OPENAI_API_KEY"
SPLIT_SEARCH_S = 10.0  # look this far back from a part's size limit for the quietest spot
QUIET_FRAME_S = 0.1


class APIResponseError(WhisperbenchError):
    """The endpoint answered, but not with a transcription."""


def encode_flac(audio: np.ndarray) -> bytes:
    """16 kHz mono 16-bit FLAC bytes."""
    import soundfile as sf

    buffer = io.BytesIO()
    sf.write(buffer, audio, SAMPLE_RATE, format="FLAC", subtype="PCM_16")
    return buffer.getvalue()


def split_points(audio: np.ndarray, max_samples: int) -> list[int]:
    """Sample offsets that cut ``audio`` into parts of at most ``max_samples``, each at the
    quietest 0.1 s frame in the last ``SPLIT_SEARCH_S`` seconds before the limit."""
    frame = int(QUIET_FRAME_S * SAMPLE_RATE)
    cuts, start = [], 0
    while len(audio) - start > max_samples:
        limit = start + max_samples
        lo = max(start + frame, limit - int(SPLIT_SEARCH_S * SAMPLE_RATE))
        window = audio[lo:limit]
        n = len(window) // frame
        if n == 0:
            cut = limit
        else:
            energy = (window[: n * frame].reshape(n, frame) ** 2).mean(axis=1)
            cut = lo + int(np.argmin(energy)) * frame + frame // 2
        cuts.append(cut)
        start = cut
    return cuts


def _root_cause(exc: BaseException) -> str:
    """The innermost cause of a chained exception, e.g. ``[Errno 111] Connection refused``."""
    while exc.__cause__ is not None or exc.__context__ is not None:
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return str(exc) or type(exc).__name__


def upload_parts(audio: np.ndarray, flac: bytes, limit: int) -> list[bytes]:
    """The FLAC uploads of ``audio``: ``flac`` itself within ``limit`` bytes, else parts cut at quiet points, each
    aimed at 90 % of the limit (the size scales with duration)."""
    if len(flac) <= limit:
        return [flac]
    max_samples = int(len(audio) * 0.9 * limit / len(flac))
    bounds = [0, *split_points(audio, max_samples), len(audio)]
    return [encode_flac(audio[a:b]) for a, b in zip(bounds, bounds[1:])]


def _duration(flac: bytes) -> float:
    import soundfile as sf

    return sf.info(io.BytesIO(flac)).duration


def _from_cache(hit: dict, upload: dict) -> Transcript:
    """A cached answer as the transcript it was (``cached``: no request was made)."""
    words = None if hit.get("words") is None else [Word(*w) for w in hit["words"]]
    segments = [Segment(*s) for s in hit.get("segments", [])]
    return Transcript(
        text=hit["text"],
        language=hit.get("language"),
        infer_s=hit["request_s"],
        cached=True,
        segments=segments,
        words=words,
        extra={"upload": upload},
    )


def _to_cache(path: Path, result: Transcript) -> None:
    """Store an answer (text, language, request time, segments, words) for the next run on the same audio."""
    words = None if result.words is None else [[w.word, w.start, w.end] for w in result.words]
    segments = [[s.start, s.end, s.text] for s in result.segments or []]
    write_json_atomic(
        path,
        {
            "text": result.text,
            "language": result.language,
            "request_s": result.infer_s,
            "segments": segments,
            "words": words,
        },
        indent=None,
    )


class OpenAIAPIAdapter(Adapter):
    """The OpenAI transcription API, or any OpenAI-compatible endpoint, through the official ``openai`` client."""

    name = "openai-api"
    prompting = "prompt"  # the request's prompt field, per example
    description = "OpenAI transcription API or any OpenAI-compatible endpoint (official openai client)"
    requires = ("openai",)
    extra = "openai-api"
    distributions = ("openai",)
    uses_weights = False
    cpu_in_process = False  # the server computes; this process only waits
    starting = "preparing the requests to the endpoint"
    long_form_algorithm = "the endpoint's own (server side); parts over the upload limit split on silence"
    word_timing = (
        "the endpoint's verbose_json words (timestamp_granularities=['segment', 'word']); whether its "
        "text is the text without word timing is the server's to keep"
    )
    options = {
        "base_url": Option("", "endpoint URL; empty: OPENAI_BASE_URL, else the OpenAI API"),
        "response_format": Option("json", "what the endpoint is asked for", ("json", "verbose_json", "text")),
        "concurrency": Option(4, "requests in flight at once", range=Range(1, integer=True)),
        "max_retries": Option(5, "retries of a failed request (the client's backoff)"),
        "timeout_s": Option(120.0, "seconds per request", range=Range(0, open_low=True)),
        "price_per_minute": Option(
            0.006, "USD per audio minute, for the cost estimate (whisper-1 list price, Nov 2026)"
        ),
        "max_upload_mb": Option(25.0, "upload limit; longer audio is split on silence", range=Range(0, open_low=True)),
        "cache": Option(True, "keep results by audio hash and request, and reuse them (--refresh bypasses)"),
    }

    @classmethod
    def summary_fields(cls, adapter_info: dict, predictions: list) -> dict:
        """What the requests behind this run cost at the configured price; cached results cost nothing."""
        price = adapter_info.get("price_per_audio_minute")
        if price is None:
            return {}
        billed_s = sum(p.audio_s for p in predictions if not p.extra.get("cached"))
        return {
            "cost_estimate_usd": round(billed_s / 60.0 * float(price), 6),
            "cached_examples": sum(1 for p in predictions if p.extra.get("cached")),
        }

    @property
    def max_in_flight(self) -> int:
        return max(1, int(self.settings["concurrency"]))

    def load(self) -> None:
        from openai import OpenAI

        base_url = self.settings["base_url"] or os.environ.get("OPENAI_BASE_URL") or None
        key = os.environ.get(API_KEY_ENV)
        if not key:
            if not base_url:
                raise OptionError(f"adapter openai-api: set {API_KEY_ENV} (or pass -o base_url=... for a local server)")
            key = "no-key-needed"  # local OpenAI-compatible servers ignore it; the client requires one
        if self.settings["response_format"] not in ("json", "verbose_json", "text"):
            raise OptionError("adapter openai-api: response_format must be json, verbose_json or text")
        self.base_url = base_url
        self.client = OpenAI(
            api_key=key,
            base_url=base_url,
            max_retries=int(self.settings["max_retries"]),
            timeout=float(self.settings["timeout_s"]),
        )
        self.cache_dir = self._cache_root()

    def _cache_root(self) -> Path | None:
        from ..models import cache_dir

        return cache_dir() / "api-results" if self.settings["cache"] else None

    def segments_timed(self, long_form: bool) -> bool:
        """verbose_json responses carry the service's segment times."""
        return self._request_options(long_form)["response_format"] == "verbose_json"

    def _request_options(self, long_form: bool, example: Example | None = None) -> dict[str, Any]:
        d = self.decoding
        options: dict[str, Any] = {
            "model": self.model,
            "response_format": self.settings["response_format"],
            "temperature": d.temperature,
        }
        language = d.language_for(True, example)
        if language:
            options["language"] = language
        prompt = d.prompt_for(example)
        if prompt:
            options["prompt"] = prompt
        if d.word_timestamps:  # word times come only with verbose_json
            options.update(response_format="verbose_json", timestamp_granularities=["segment", "word"])
        return options

    def _cache_path(self, flac: bytes, options: dict) -> Path | None:
        if self.cache_dir is None:
            return None
        key = json.dumps(
            {
                "audio": hashlib.sha256(flac).hexdigest(),
                "endpoint": redact_url(self.base_url) if self.base_url else "",
                **options,
            },
            sort_keys=True,
        )
        return self.cache_dir / f"{hashlib.sha256(key.encode()).hexdigest()}.json"

    def _request(
        self, flac: bytes, options: dict, label: str
    ) -> tuple[str, list[Segment], str | None, list[Word] | None]:
        import openai

        try:
            response = self.client.audio.transcriptions.create(file=(f"{label}.flac", flac, "audio/flac"), **options)
        except openai.APIConnectionError as exc:  # the client says only "Connection error.": name host and cause
            raise WhisperbenchError(
                f"cannot reach {self._endpoint()}: {_root_cause(exc)} "
                f"({type(exc).__name__}, after the client's retries)"
            ) from exc
        if options["response_format"] == "text":
            return str(response), [], None, None
        if isinstance(response, str) or not isinstance(getattr(response, "text", None), str):
            # the client hands back the raw body when it is not JSON: never score that as a transcript
            raise APIResponseError(
                f"malformed {options['response_format']} response from the endpoint: {str(response)[:120]!r}"
            )
        segments = [Segment(float(s.start), float(s.end), s.text) for s in (getattr(response, "segments", None) or [])]
        words = getattr(response, "words", None)
        words = None if words is None else [Word(str(w.word).strip(), float(w.start), float(w.end)) for w in words]
        return response.text, segments, getattr(response, "language", None), words

    def _endpoint(self) -> str:
        return redact_url(str(self.client.base_url)) if getattr(self, "client", None) else "the endpoint"

    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        assert audio is not None
        options = self._request_options(long_form, example)
        limit = int(float(self.settings["max_upload_mb"]) * 1_000_000)
        flac = encode_flac(audio)
        parts = upload_parts(audio, flac, limit)
        upload = {"format": "flac", "bytes": len(flac), "parts": len(parts)}
        cache_path = self._cache_path(flac, options)
        if cache_path is not None and cache_path.exists() and not self.refresh:
            return _from_cache(json.loads(cache_path.read_text(encoding="utf-8")), upload)
        start = time.perf_counter()
        texts, segments, language, offset = [], [], None, 0.0
        words: list[Word] | None = [] if self.decoding.word_timestamps else None
        for index, part in enumerate(parts):
            text, part_segments, language, part_words = self._request(part, options, f"{example.id}-{index}")
            texts.append(text.strip())
            segments += [Segment(s.start + offset, s.end + offset, s.text) for s in part_segments]
            words = (
                None
                if words is None or part_words is None
                else words + [Word(w.word, w.start + offset, w.end + offset) for w in part_words]
            )
            offset += _duration(part)
        request_s = time.perf_counter() - start
        text = " ".join(t for t in texts if t)
        result = Transcript(
            text=text, segments=segments, language=language, infer_s=request_s, words=words, extra={"upload": upload}
        )
        if cache_path is not None:
            _to_cache(cache_path, result)
        return result

    def describe(self) -> dict:
        info = super().describe()
        info["settings"] = dict(
            self.settings, base_url=redact_text(getattr(self, "base_url", None) or self.settings["base_url"])
        )
        info["price_per_audio_minute"] = float(self.settings["price_per_minute"])
        info["api_key_source"] = f"${API_KEY_ENV}" if os.environ.get(API_KEY_ENV) else "none"
        return info


#: the adapter this module adds (found by :data:`whisperbench.adapters.ADAPTERS`)
ADAPTER = OpenAIAPIAdapter
