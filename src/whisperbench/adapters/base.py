"""The adapter protocol: load a model once, transcribe one audio, report what was used.

An adapter does not score, store, time the run or print. Its heavy dependency is imported inside
``load`` so that listing adapters and running others never needs it.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import typing
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..core.languages import LanguageError, language_code
from ..core.ranges import Range
from ..core.redact import redact
from ..errors import AdapterUnavailable, OptionError
from ..process.host import idle_cpus
from ..types import Example, Segment, Transcript, Word
from .options import Option, parse_options

#: ``-o language=dataset``: each example's own label (the dataset's ``language`` column)
FROM_DATASET = "dataset"


def _language_option(value: str | None) -> str | None:
    """``-o language=``: ``auto`` (or nothing) lets a multilingual model detect; ``dataset`` takes each example's
    label; else Whisper's code for a code or name ("de", "deu", "German")."""
    if value is None or value.lower() == "auto":
        return None
    if value.lower() == FROM_DATASET:
        return FROM_DATASET
    try:
        return language_code(value)
    except LanguageError as exc:
        raise OptionError(f"option language: {exc}") from None


@dataclass
class DecodingOptions:
    """Decoding settings shared by every implementation; defaults are the harness's fair baseline.

    Greedy (beam 1), temperature 0 and no temperature fallback; no timestamps for short-form
    (``without_timestamps=None`` means: True for short-form, False for long-form, which needs them).
    ``language=None`` takes the model's (``en`` for ``*.en``) or lets a multilingual model detect it.
    The no-speech / log-prob / compression-ratio heuristics that drop or re-decode segments are off
    (None) unless set. ``word_timestamps`` asks for word times where the implementation offers them.
    ``extra`` holds adapter-specific options (e.g. ``compute_type``), checked by the adapter.
    """

    language: str | None = None
    task: str = "transcribe"
    beam_size: int = 1
    temperature: float = 0.0
    temperature_fallback: bool = False
    without_timestamps: bool | None = None
    condition_on_previous_text: bool = True
    initial_prompt: str | None = None
    #: prompt each example with its keywords (``--prompt-from-keywords``, after ``initial_prompt`` when both are set;
    #: docs/keywords.md): the terms joined by ", "
    prompt_from_keywords: bool = False
    no_speech_threshold: float | None = None
    logprob_threshold: float | None = None
    compression_ratio_threshold: float | None = None
    #: word timing (``--word-timestamps``, also ``-o word_timestamps=true``): the harness asks each implementation
    #: for word times in the way that leaves its text as it is without them (see ``Adapter.word_timing``); an
    #: implementation that cannot give them is refused (exit 2). It costs time.
    word_timestamps: bool = False
    threads: int = field(default_factory=idle_cpus)
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_pairs(cls, pairs: list[str], word_timestamps: bool = False) -> DecodingOptions:
        """Parse ``KEY=VALUE`` strings; known keys are typed, the rest go to ``extra`` as strings.
        ``word_timestamps`` (``--word-timestamps``) turns word timing on as ``word_timestamps=true`` does."""
        opts = cls()
        common = common_options()
        for pair in pairs:
            if "=" not in pair:
                raise OptionError(f"option {pair!r} is not KEY=VALUE")
            key, value = (s.strip() for s in pair.split("=", 1))
            if key in common:
                setattr(opts, key, common[key].parse("decoding", key, value))
            else:  # the adapter's own option: typed by the adapter's declared options (parse_options)
                opts.extra[key] = value
        opts.word_timestamps = opts.word_timestamps or word_timestamps
        opts.language = _language_option(opts.language)
        if opts.beam_size < 1 or opts.threads < 1:
            raise OptionError("beam_size and threads must be >= 1")
        return opts

    def timestamps_off(self, long_form: bool) -> bool:
        """Whether to decode without timestamps for this input."""
        return (not long_form) if self.without_timestamps is None else self.without_timestamps

    def temperatures(self) -> tuple[float, ...]:
        """The temperature schedule: a single value unless fallback is on (Whisper's 0.2 steps)."""
        if not self.temperature_fallback:
            return (self.temperature,)
        return tuple(round(self.temperature + 0.2 * i, 1) for i in range(int((1.0 - self.temperature) / 0.2) + 1))

    def language_for(self, multilingual: bool, example: Example | None = None) -> str | None:
        """The language to force on ``example``: the option (with ``dataset``, the example's label; detected
        when it has none), else English for an English-only model, else None (detect).

        >>> options = DecodingOptions(language="dataset")
        >>> options.language_for(True, Example("a", b"", "", language="de")), options.language_for(False)
        ('de', 'en')
        """
        if not multilingual:
            return "en" if self.language in (None, FROM_DATASET) else self.language
        if self.language == FROM_DATASET:
            return example.language if example is not None else None
        return self.language

    def prompt_for(self, example: Example | None = None) -> str | None:
        """The vocabulary prompt of ``example``: ``initial_prompt``, then (``prompt_from_keywords``) the example's
        keywords joined by ", "; None when that is empty.

        >>> d = DecodingOptions(initial_prompt="Names:", prompt_from_keywords=True)
        >>> d.prompt_for(Example("a", b"", "", extra={"keywords": ["Wojciech", "Kraków"]})), d.prompt_for(None)
        ('Names: Wojciech, Kraków', 'Names:')
        """
        terms = example.extra.get("keywords") if self.prompt_from_keywords and example is not None else None
        parts = [self.initial_prompt or "", ", ".join(terms) if isinstance(terms, list) else ""]
        return " ".join(part for part in parts if part) or None

    def whisper_transcribe_kwargs(
        self, multilingual: bool, long_form: bool, example: Example | None = None
    ) -> dict[str, Any]:
        """Keyword arguments of openai-whisper's ``transcribe`` (also taken by mlx-whisper's)."""
        return dict(
            language=self.language_for(multilingual, example),
            task=self.task,
            temperature=self.temperatures(),
            condition_on_previous_text=self.condition_on_previous_text,
            initial_prompt=self.prompt_for(example),
            without_timestamps=self.timestamps_off(long_form),
            no_speech_threshold=self.no_speech_threshold,
            logprob_threshold=self.logprob_threshold,
            compression_ratio_threshold=self.compression_ratio_threshold,
            word_timestamps=False,  # words are aligned after decoding (adapters/word_timing.py), never inside the loop
        )

    def to_json(self) -> dict[str, Any]:
        """The options as recorded in run.json (credentials in URL options removed)."""
        data = dataclasses.asdict(self)
        data["extra"] = redact(dict(self.extra))
        return data


#: the numbers each decoding option takes where "finite and not negative" (every number option's rule) is not it
_DECODING_RANGES = {
    "beam_size": Range(1, integer=True),
    "threads": Range(1, integer=True),
    "no_speech_threshold": Range(0, 1),
    "logprob_threshold": Range(-100, 0),  # a mean log-probability (Whisper's default -1.0)
    "compression_ratio_threshold": Range(0, open_low=True),
}


@functools.cache
def common_options() -> dict[str, Option]:
    """The options every adapter takes (``-o KEY=VALUE``), declared by :class:`DecodingOptions`' fields: typed
    by each field's annotation (``Optional[X]`` also takes ``none``), defaulting to the field's default.

    >>> common_options()["beam_size"].parse("decoding", "beam_size", "5"), common_options()["beam_size"].kind
    (5, 'integer')
    """
    hints = typing.get_type_hints(DecodingOptions)
    table = {}
    for f in dataclasses.fields(DecodingOptions):
        if f.name == "extra":
            continue
        inner = [t for t in typing.get_args(hints[f.name]) if t is not type(None)]  # Optional[X] -> X
        has_default = f.default is not dataclasses.MISSING
        default = f.default if has_default else f.default_factory()  # type: ignore[operator]  # else a factory
        kind = inner[0] if inner else hints[f.name]
        table[f.name] = Option(default, value_type=kind, nullable=bool(inner), range=_DECODING_RANGES.get(f.name))
    return table


#: where a native long-form transcript's seams came from: the window offsets (``seek``) its segments carry
SEAMS_FROM_DECODER = "decoder windows"
#: … the chunk geometry of a chunking pipeline (transformers' ``chunk_length_s``/``stride_length_s``)
SEAMS_FROM_PIPELINE = "pipeline chunks"


def seams_from_seeks(seeks: Iterable[int], frames_per_second: int = 100) -> list[float]:
    """Where one decoding window's text gives way to the next (s): the start of each window after the first, from
    the window offsets (``seek``, in feature frames) of the segments it produced.

    >>> seams_from_seeks([0, 0, 2896, 2896, 5604])
    [28.96, 56.04]
    """
    starts = sorted({int(seek) for seek in seeks})
    return [round(start / frames_per_second, 3) for start in starts[1:]]


def seam_extra(seams_s: list[float], source: str) -> dict[str, Any]:
    """What a native long-form transcript stores in its prediction's ``extra``: the seams and where they came from
    (the harness's windowed strategies store theirs the same way)."""
    return {"seams_s": seams_s, "seams_from": source}


def transcript_from_whisper_result(result: dict, long_form: bool = False, word_timing: bool = False) -> Transcript:
    """A Transcript from the dict that openai-whisper's (or mlx-whisper's) ``transcribe`` returns; with
    ``word_timing``, the words its segments carry (added by :mod:`.word_timing`; none for an empty transcript), else
    None. Long-form: the seams of its decoding windows, from the segments' ``seek`` (the window's start in 10 ms mel
    frames), over the segments with text."""
    segments = [Segment(float(s["start"]), float(s["end"]), s["text"]) for s in result["segments"]]
    words = (
        [
            Word(w["word"].strip(), float(w["start"]), float(w["end"]))
            for s in result["segments"]
            for w in s.get("words") or []
        ]
        if word_timing
        else None
    )
    seeks = [s["seek"] for s in result["segments"] if "seek" in s and s["text"].strip()]
    known = long_form and all("seek" in s for s in result["segments"])
    extra = seam_extra(seams_from_seeks(seeks), SEAMS_FROM_DECODER) if known else {}
    counted = [s.get("tokens") for s in result["segments"]]
    tokens = sum(len(t) for t in counted) if all(isinstance(t, list) for t in counted) else None
    return Transcript(
        text=result["text"].strip(),
        segments=segments,
        language=result.get("language"),
        words=words,
        extra=extra,
        tokens=tokens,
    )


def window_transcript(tokens: list[int], tokenizer, text: str, **fields: Any) -> Transcript:
    """A Transcript of one window decoded with timestamps by a Whisper tokenizer's tokens.

    Segments lie between timestamp tokens (``<|t0|> text <|t1|>``). When the tokens end with a
    timestamp that opens a segment (the model stopped inside it), that segment is left out and its
    start becomes ``resume_s``, where openai-whisper's loop resumes; ``text`` is kept whole when no
    segment finished at all. ``tokens`` counts what was decoded (below end-of-text, timestamps included).
    """
    fields.setdefault("tokens", sum(1 for token in tokens if token != tokenizer.eot))
    segments, start, pending = [], None, []
    for token in tokens:
        if token >= tokenizer.eot and token < tokenizer.timestamp_begin:
            continue
        if token >= tokenizer.timestamp_begin:
            time_s = (token - tokenizer.timestamp_begin) * 0.02
            if start is None:
                start = time_s
            else:
                segments.append(Segment(start, time_s, tokenizer.decode(pending)))
                start, pending = None, []
        elif start is not None:
            pending.append(token)
    if start is None or not segments:
        return Transcript(text=text.strip(), segments=segments, **fields)
    return Transcript(text="".join(s.text for s in segments).strip(), segments=segments, resume_s=start, **fields)


class Adapter(ABC):
    """One Whisper implementation behind the harness.

    Subclasses set ``name`` (registry key), ``requires`` (importable module names), ``extra`` (the pip extra that
    installs them) and ``options`` (adapter-specific option names -> default)."""

    name: ClassVar[str]
    description: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    extra: ClassVar[str] = ""
    #: the install command when ``pip install 'whisperbench[extra]'`` cannot say it (e.g. ``--no-deps``)
    install: ClassVar[str] = ""
    options: ClassVar[dict[str, Option]] = {}  # adapter-specific options (see adapters/options.py)
    #: the compressed or reduced-precision variants ``whisperbench sweep`` runs: name -> adapter options
    variants: ClassVar[dict[str, dict[str, str]]] = {}
    needs_audio: ClassVar[bool] = True
    distributions: ClassVar[tuple[str, ...]] = ()  # PyPI names whose versions go to run.json
    long_form_algorithm: ClassVar[str] = ""
    #: where native long-form decoding's seams (the start of each window after the first) are read from:
    #: ``SEAMS_FROM_DECODER`` (segments' ``seek``), ``SEAMS_FROM_PIPELINE``; None: the implementation does not
    #: tell, so its transcripts carry none and the timing metric falls back to the 30 s marks
    native_seams: ClassVar[str | None] = None
    #: False for implementations that only transcribe 30 s: long-form audio then goes through the
    #: harness's chunked strategy (``--long-form native`` resolves to ``chunked``)
    native_long_form: ClassVar[bool] = True
    uses_weights: ClassVar[bool] = True  # weights come from whisperbench.models
    #: whether the implementation computes in this process (its CPU time is the harness's process clock); one that
    #: runs in a worker process reports ``Transcript.cpu_s`` itself or leaves the CPU basis unmeasured
    cpu_in_process: ClassVar[bool] = True
    #: whether the implementation computes its outputs while the run goes (its speed measured here); False (the
    #: outputs were made elsewhere: recorded hypotheses) lets a large run be scored on the other cores as its
    #: predictions are written (:class:`whisperbench.scoring.table.ScoredWhileWritten`), timing nothing
    computes: ClassVar[bool] = True
    #: what a run's log says happens before its first result
    starting: ClassVar[str] = "loading the model and warming up"
    #: how the implementation gives word times with ``--word-timestamps`` (run.json ``adapter_info.word_timing``),
    #: decoded so that the text stays the text without them; None: it cannot, and word timing is refused (exit 2)
    word_timing: ClassVar[str | None] = None
    #: why it cannot (the refusal's reason)
    no_word_timing: ClassVar[str] = "it has no word alignment"
    prompting: ClassVar[str | None] = None  # how it takes a vocabulary prompt: see refuse_prompt; None: it cannot
    weights_path: Any | None = None  # set by load(): the file or folder the implementation loaded
    refresh: bool = False  # set by the runner: adapters with a result cache must bypass it
    #: True for adapters that already run their native code in a child process (whisper-cpp): the
    #: runner does not wrap them again, it sets ``call_timeout_s`` for them to honour
    self_isolating: ClassVar[bool] = False
    call_timeout_s: float | None = None

    def __init__(self, model: str, decoding: DecodingOptions | None = None):
        self.model = model
        self.decoding = decoding or DecodingOptions()
        self.settings = parse_options(self.name, self.options, self.decoding.extra)

    @classmethod
    def missing(cls) -> list[str]:
        """Required modules that cannot be imported here."""
        return [mod for mod in cls.requires if importlib.util.find_spec(mod) is None]

    @classmethod
    def ensure_available(cls) -> None:
        """Raise AdapterUnavailable (naming what to install) when the implementation's packages are missing."""
        missing = cls.missing()
        if missing:
            raise AdapterUnavailable(
                f"adapter {cls.name}: not installed ({', '.join(missing)} missing): {cls.install_hint()}"
            )

    @classmethod
    def install_hint(cls) -> str:
        """The command that installs what the implementation needs (``install`` when the adapter gives one)."""
        if cls.install:
            return cls.install
        return f"pip install 'whisperbench[{cls.extra}]'" if cls.extra else f"pip install {' '.join(cls.requires)}"

    @abstractmethod
    def load(self) -> None:
        """Load the model (called once, timed apart from inference)."""

    @abstractmethod
    def transcribe(self, audio: np.ndarray | None, example: Example, *, long_form: bool) -> Transcript:
        """Transcribe 16 kHz mono float32 ``audio`` (None when ``needs_audio`` is False)."""

    def options_set_by_user(self, *keys: str) -> bool:
        """Whether the user set any of these adapter options (``-o``), rather than leaving the default: a
        model already in the adapter's own format then runs as it is unless its variant was asked for."""
        return any(key in self.decoding.extra for key in keys)

    @classmethod
    def variant_refused(cls, name: str) -> str | None:
        """Why this machine cannot run variant ``name`` (None: it can), e.g. a compute type the CPU lacks."""
        return None

    @classmethod
    def summary_fields(cls, adapter_info: dict[str, Any], predictions: list) -> dict[str, Any]:
        """Fields this implementation adds to summary.json (from its run.json ``adapter_info`` and the stored
        predictions), so the runner names no implementation: e.g. JAX's compile time, the API's cost."""
        return {}

    def dataset_warnings(self, ids: set[str]) -> list[str]:
        """What to tell the user before the run about the dataset's example ``ids`` (a recorded file's ids that the
        dataset lacks); none by default."""
        return []

    def source_digest(self) -> str | None:
        """A digest of inputs outside the dataset and the run's options that decide this adapter's outputs
        (a hypotheses file): when it changes, every stored result of a resumed run is redone."""
        return None

    def describe(self) -> dict[str, Any]:
        """What ran: package versions, resolved weights, effective settings (goes to run.json)."""
        from ..models import describe_source
        from ..models.resolve import loaded_weights
        from ..process.host import package_versions

        info: dict[str, Any] = {
            "settings": self.settings,
            "versions": package_versions(self.distributions),
            "long_form_algorithm": self.long_form_algorithm,
            "long_form_seams": self.native_seams or "not told (30 s marks)",
        }
        if self.decoding.word_timestamps:
            info["word_timing"] = self.word_timing
        if self.uses_weights:
            info["weights"] = describe_source(self.model)
            if self.weights_path is not None:
                info["weights"] |= loaded_weights(self.weights_path)
        return info

    @property
    def batch_size(self) -> int:
        """How many short (<= 30 s) audios ``transcribe_batch`` takes at once; 1 means no batching.

        The runner batches short-form examples, and the harness's chunked long-form strategy batches
        windows, by this size. Adapters that batch natively return their ``batch_size`` option.
        """
        return 1

    def transcribe_batch(
        self, audios: list[np.ndarray], examples: list[Example], *, timestamps: bool = False
    ) -> list[Transcript]:
        """Transcribe up to ``batch_size`` audios of <= 30 s each, in order; text only.

        ``timestamps=False``: short-form decoding. ``timestamps=True``: decode with timestamp tokens,
        as the harness does for long-form windows (without them Whisper often stops after a word or
        two on a window that starts mid-sentence); the returned text leaves the timestamps out.
        The default runs ``transcribe`` one audio at a time (``long_form=timestamps``); batching
        adapters override it. A raised exception fails the whole batch: the runner then retries its
        examples one by one.
        """
        return [self.transcribe(audio, example, long_form=timestamps) for audio, example in zip(audios, examples)]

    def refuse_word_timing(self) -> None:
        """With word timing asked for, an OptionError (exit 2) when the implementation cannot give word times
        (``word_timing`` is None), or when the checkpoint's alignment heads name decoder layers or heads the
        weights lack (a pruned fine-tune that kept its parent's generation config; transcription alone goes on
        with openai-whisper's default heads)."""
        if not self.decoding.word_timestamps:
            return
        if self.word_timing is None:
            raise OptionError(
                f"word timing refused: adapter {self.name} cannot give word times "
                f"({self.no_word_timing}); run it without --word-timestamps"
            )
        if not self.uses_weights:
            return
        from ..models.resolve import heads_problem

        problem = heads_problem(self.model)
        if problem is not None:
            raise OptionError(f"word timing refused: {problem} (transcribe without --word-timestamps)")

    def segments_timed(self, long_form: bool) -> bool:
        """Whether this input's segment times are predicted (decoded with timestamps), so worth storing: a clip
        decoded without timestamps has one segment spanning it, which says nothing about timing."""
        return not self.decoding.timestamps_off(long_form)

    @property
    def max_in_flight(self) -> int:
        """How many ``transcribe`` calls may run at once in threads (I/O-bound adapters raise it)."""
        return 1

    def close(self) -> None:  # noqa: B027 - a no-op by default: an adapter holding nothing to free keeps it
        """Free the model."""


def refuse_prompt(adapter: Adapter) -> None:
    """With a vocabulary prompt asked for (``--prompt``, ``--prompt-from-keywords``, ``-o initial_prompt``), an
    OptionError (exit 2) naming the adapter when it cannot take one (``prompting`` None; else the name of its own
    mechanism: ``initial_prompt``, ``prompt_ids``, the API's ``prompt``), or cannot take one per example: a class
    that sets ``prompts_each_example = False`` (one prompt for the whole run), or batches of several examples
    decoded under one prompt."""
    d = adapter.decoding
    if not (d.initial_prompt or d.prompt_from_keywords):
        return
    if adapter.prompting is None:
        raise OptionError(
            f"prompt refused: adapter {adapter.name} cannot take a vocabulary prompt; run it without --prompt, "
            "--prompt-from-keywords and initial_prompt"
        )
    each = getattr(adapter, "prompts_each_example", True)
    if d.prompt_from_keywords and (not each or adapter.batch_size > 1):
        why = "one prompt for the whole run" if not each else "one prompt per batch"
        raise OptionError(
            f"--prompt-from-keywords refused: adapter {adapter.name} takes {why} ({adapter.prompting}); give the "
            "terms as --prompt TEXT" + (" or use batch_size=1" if each else "")
        )
