"""Core records that flow through the pipeline; plain dataclasses that serialize to JSON."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, Literal

from .errors import DatasetError

Form = Literal["short", "long"]
Status = Literal["ok", "error"]

#: Audio longer than this (seconds) does not fit one Whisper window: its dataset is long-form.
WHISPER_WINDOW_S = 30.0
#: a stored time may lie this far (s) past the audio's end: Whisper's timestamps step by 20 ms and an aligner's last
#: step may round up to the next one; starts may step back by the 1 ms that stored times are rounded to
TIME_TOLERANCE_S = 0.05


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def storable_text(text: str) -> str:
    r"""``text`` as UTF-8 can hold it: a lone surrogate (valid JSON such as ``"\ud83d"``, from a file or a server,
    but no character) becomes U+FFFD, as a decoder shows an unreadable byte; everything else is kept.

    >>> storable_text("hello \ud83d world") == "hello \ufffd world"
    True
    """
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)  # isascii: a flag CPython keeps


def stored_output(text: str) -> str:
    """An output text as a prediction stores it (its ``hypothesis``): without the space around it that Whisper's
    text often starts with, :func:`storable_text`.

    >>> stored_output(" And so my fellow Americans ")
    'And so my fellow Americans'
    """
    return storable_text(text.strip())


def times_problem(items: Sequence[dict[str, Any]], audio_s: float, kind: str = "word") -> str | None:
    """Why these stored times cannot be right (None: they can): every start and end finite, ``0 <= start <= end <=
    audio length`` (plus :data:`TIME_TOLERANCE_S`; no upper bound while the length is unknown, 0), starts in order.

    >>> times_problem([{"word": "And", "start": -996.27, "end": -996.27}], 11.0)
    "word 1 ('And') starts at -996.27 s, before the audio begins"
    >>> times_problem([{"word": "a", "start": 0.5, "end": 0.9}, {"word": "b", "start": 0.4, "end": 1.0}], 2.0)
    "word 2 ('b') starts at 0.4 s, before word 1 (0.5 s): not in order"
    >>> times_problem([{"start": 0.0, "end": 2.04, "text": "hi"}], 2.0, "segment") is None
    True
    """
    previous = -math.inf
    for number, item in enumerate(items, 1):
        name = f"{kind} {number} ({str(item.get('word', item.get('text', ''))).strip()[:30]!r})"
        try:
            start, end = float(item["start"]), float(item["end"])
        except (KeyError, TypeError, ValueError):
            return f"{name} has no numeric start and end"
        if not (math.isfinite(start) and math.isfinite(end)):
            return f"{name} has a time that is not a finite number ({start}, {end})"
        if start < 0:
            return f"{name} starts at {start:g} s, before the audio begins"
        if end < start:
            return f"{name} ends at {end:g} s, before it starts ({start:g} s)"
        if audio_s > 0 and end > audio_s + TIME_TOLERANCE_S:
            return f"{name} ends at {end:g} s, after the audio's end ({audio_s:g} s, tolerance {TIME_TOLERANCE_S:g} s)"
        if start < previous - 0.001:
            return f"{name} starts at {start:g} s, before {kind} {number - 1} ({previous:g} s): not in order"
        previous = start
    return None


@dataclass(frozen=True)
class AudioInfo:
    """What an audio file's header says: duration in seconds, sample rate and channels."""

    duration_s: float
    sample_rate: int
    channels: int


@dataclass
class Example:
    """One utterance to transcribe.

    ``audio`` is a file path, or the encoded bytes of an audio file (as a Hugging Face dataset
    holds them). ``text`` is the human transcript, raw (not normalized).
    """

    id: str
    audio: str | bytes
    text: str
    duration_s: float | None = None
    language: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def audio_label(self) -> str:
        """Where the audio comes from, for error messages."""
        return self.audio if isinstance(self.audio, str) else f"<{len(self.audio)} bytes in memory>"


@dataclass
class Dataset:
    """A named list of examples of one form, identified by a content hash."""

    name: str
    form: Form
    examples: list[Example]
    content_hash: str
    source: str = ""

    def __len__(self) -> int:
        return len(self.examples)

    def __iter__(self) -> Iterator[Example]:
        """The examples in order (``for e in wb.load_dataset(...)``)."""
        return iter(self.examples)

    def __getitem__(self, index: int) -> Example:
        return self.examples[index]


@dataclass
class Segment:
    """A stretch of a transcript with its times in seconds from the start of the audio."""

    start: float
    end: float
    text: str


@dataclass
class Word:
    """One word with its times in seconds (where an implementation offers word timing)."""

    word: str
    start: float
    end: float


@dataclass
class Emission:
    """One output of a streaming implementation: when it came and what it said.

    ``audio_s``: the audio fed so far (the stream's cursor, seconds); ``wall_s``: seconds since the stream
    started; ``committed``: the text this emission commits (appended to what earlier emissions committed,
    never revised: the stream's committed text is the concatenation, kept as pieces so a long stream is stored
    in linear space); ``interim``: the whole uncommitted text shown after it (revisable, replaced by the next).

    >>> Emission.from_json(Emission(1.0, 0.31, " And so", " my fellow").to_json())
    Emission(audio_s=1.0, wall_s=0.31, committed=' And so', interim=' my fellow')
    """

    audio_s: float
    wall_s: float
    committed: str = ""
    interim: str = ""

    def to_json(self) -> dict[str, Any]:
        """The stored form (times in seconds, rounded to the millisecond)."""
        return {
            "audio_s": round(self.audio_s, 3),
            "wall_s": round(self.wall_s, 3),
            "committed": self.committed,
            "interim": self.interim,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Emission:
        """One stored emission back."""
        return cls(
            float(data["audio_s"]), float(data["wall_s"]), str(data.get("committed", "")), str(data.get("interim", ""))
        )


@dataclass
class Transcript:
    """What an adapter returns for one audio."""

    text: str
    segments: list[Segment] = field(default_factory=list)
    #: word times where the implementation gave them (word timing on); None: not offered or not asked
    words: list[Word] | None = None
    language: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    #: inference time the adapter knows better than the harness's stopwatch (e.g. the original
    #: request time of a cached API result); None means: use the stopwatch
    infer_s: float | None = None
    #: CPU time the adapter knows (a device's, recorded in a hypotheses file); None: the harness's process clock
    cpu_s: float | None = None
    #: tokens the decoder produced for this text (timestamp tokens included, the prompt and end-of-text not), as
    #: the implementation reports them; None: it does not say
    tokens: int | None = None
    cached: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # stored in the prediction's ``extra``
    #: a streaming implementation's outputs in the order it gave them (``text`` is the final committed text);
    #: None: not a stream
    stream: list[Emission] | None = None
    #: a window decoded with timestamps whose last segment was unfinished (the model predicted where
    #: it starts, then stopped): that start, in seconds. The harness resumes there, as openai-whisper's
    #: loop does. None: the window was transcribed to its end (or the adapter cannot tell).
    resume_s: float | None = None


@dataclass
class WordCounts:
    """Alignment counts between a normalized transcript and hypothesis."""

    hits: int = 0
    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0

    @property
    def errors(self) -> int:
        """Substitutions + deletions + insertions."""
        return self.substitutions + self.deletions + self.insertions

    @property
    def transcript_words(self) -> int:
        """Transcript words (hits + substitutions + deletions): WER's denominator."""
        return self.hits + self.substitutions + self.deletions

    def error_rate(self) -> float | None:
        """Errors per transcript word in percent (WER, or CER over characters); None without transcript words.

        >>> WordCounts(3, 1, 0, 1).error_rate()
        50.0
        """
        return None if self.transcript_words == 0 else 100.0 * self.errors / self.transcript_words

    def __add__(self, other: WordCounts) -> WordCounts:
        return WordCounts(
            self.hits + other.hits,
            self.substitutions + other.substitutions,
            self.deletions + other.deletions,
            self.insertions + other.insertions,
        )


class UnscoredError(ValueError):
    """A score asked of a prediction that was never scored (a bug in the caller, never read as zeros)."""


@dataclass(frozen=True)
class ExampleScore:
    """One example's score with one normalizer: the normalized texts, word counts and, where asked for,
    character counts (CER's; no spaces for languages written without them). ``normalizer`` is its key: a score
    is never read for another normalizer.

    >>> s = ExampleScore("english", "a b c", "a x c", WordCounts(2, 1, 0, 0))
    >>> round(s.wer, 2), s.cer, s.to_fields()["hits"]
    (33.33, None, 2)
    """

    normalizer: str
    transcript_norm: str
    hypothesis_norm: str
    words: WordCounts
    chars: WordCounts | None = None

    @property
    def wer(self) -> float | None:
        """The example's WER in percent; None when its normalized transcript is empty."""
        return self.words.error_rate()

    @property
    def cer(self) -> float | None:
        """The example's CER in percent; None without character counts or characters."""
        return self.chars.error_rate() if self.chars is not None else None

    def to_fields(self) -> dict[str, Any]:
        """The flat fields a ``predictions.jsonl`` line stores (``scored_with`` names the normalizer)."""
        chars = self.chars
        return {
            "transcript_norm": self.transcript_norm,
            "hypothesis_norm": self.hypothesis_norm,
            "wer": self.wer,
            **dataclasses.asdict(self.words),
            "cer": self.cer,
            **{f"char_{k}": (getattr(chars, k) if chars else None) for k in _COUNT_NAMES},
            "scored_with": self.normalizer,
        }

    def packed(self) -> tuple[Any, ...]:
        """The score as plain values (:meth:`unpacked` makes it again): what a worker process sends back, because a
        tuple of plain values pickles and reads back much faster than the objects.

        >>> s = ExampleScore("english", "a b", "a", WordCounts(1, 0, 1, 0), WordCounts(1, 0, 2, 0))
        >>> s.packed()[3:], ExampleScore.unpacked(s.packed()) == s
        (((1, 0, 1, 0), (1, 0, 2, 0)), True)
        """
        chars = self.chars
        return (
            self.normalizer,
            self.transcript_norm,
            self.hypothesis_norm,
            _counts(self.words),
            chars and _counts(chars),
        )

    @classmethod
    def unpacked(cls, values: tuple[Any, ...]) -> ExampleScore:
        """The score :meth:`packed` gave ``values`` of."""
        normalizer, transcript_norm, hypothesis_norm, words, chars = values
        score = object.__new__(cls)  # its fields set at once, not one object.__setattr__ each (frozen): per example
        score.__dict__.update(
            normalizer=normalizer,
            transcript_norm=transcript_norm,
            hypothesis_norm=hypothesis_norm,
            words=WordCounts(*words),
            chars=chars and WordCounts(*chars),
        )
        return score


def _counts(counts: WordCounts) -> tuple[int, int, int, int]:
    return counts.hits, counts.substitutions, counts.deletions, counts.insertions


_COUNT_NAMES = ("hits", "substitutions", "deletions", "insertions")
#: the score fields lines stored by earlier versions carry beside the raw output (:meth:`ExampleScore.to_fields`,
#: under the names of then): dropped on reading, never trusted
SCORE_FIELDS = frozenset(
    (
        "reference_norm",
        "transcript_norm",
        "hypothesis_norm",
        "wer",
        "cer",
        "scored_with",
        *_COUNT_NAMES,
        *(f"char_{k}" for k in _COUNT_NAMES),
    )
)


@dataclass
class Prediction:
    """One line of ``predictions.jsonl``: the raw output (what the implementation said, its status, timing) and,
    apart from it, its :class:`ExampleScore` with one normalizer (``score``; None: not scored).

    Scoring never changes the raw fields: :func:`~whisperbench.scoring.engine.score_prediction` returns a copy
    with a new ``score``, and a score is used only for the normalizer it names (else it is computed afresh).
    """

    id: str
    #: the human transcript of the example, raw (the dataset's text)
    transcript: str
    hypothesis: str
    status: Status = "ok"
    error: str | None = None
    audio_s: float = 0.0
    infer_s: float = 0.0
    #: the example's language as the dataset labels it (Whisper's code); None: unlabelled
    language_label: str | None = None
    #: the language the implementation chose or detected (Whisper's code); None: it does not say
    detected_language: str | None = None
    #: the implementation's timing, ``[{start, end, text}]`` / ``[{word, start, end}]`` in seconds; None: absent
    segments: list[dict[str, Any]] | None = None
    words: list[dict[str, Any]] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: the process's CPU time (all its threads) during the implementation's call, in seconds; None: not measured
    cpu_s: float | None = None
    #: tokens decoded (``Transcript.tokens``), for ms per token; None: the implementation does not say
    tokens: int | None = None
    #: a streaming run's emissions (``Emission.to_json`` each: audio cursor, wall time, committed piece, interim
    #: text); None: not a stream
    stream: list[dict[str, Any]] | None = None
    score: ExampleScore | None = None

    @property
    def wer(self) -> float | None:
        """The scored WER in percent (None: not scored, or an empty normalized transcript)."""
        return self.score.wer if self.score is not None else None

    @property
    def cer(self) -> float | None:
        """The scored CER in percent (None: not scored with characters, or no characters)."""
        return self.score.cer if self.score is not None else None

    def with_score(self, score: ExampleScore | None) -> Prediction:
        """A copy of this prediction with ``score`` (the raw fields shared, as ``dataclasses.replace`` shares them;
        a tenth of its cost, which counts at a million predictions).

        >>> pred = Prediction("a", "hi", "hi")
        >>> copy = pred.with_score(None)
        >>> copy == pred and copy is not pred
        True
        """
        copy = object.__new__(Prediction)
        copy.__dict__.update(self.__dict__)
        copy.score = score
        return copy

    def packed(self) -> tuple[Any, ...]:
        """The prediction as plain values: raw fields in order, then the score packed (None: unscored); :meth:`unpacked`
        makes it again. What scoring workers send back (a scored prediction, its score included): a tuple of plain
        values pickles in a third of an object's time.

        >>> pred, score = Prediction("a", "Hi.", "hi"), ExampleScore("basic", "hi", "hi", WordCounts(1, 0, 0, 0), None)
        >>> [Prediction.unpacked(p.packed()) == p for p in (pred, pred.with_score(score))], pred.packed()[:2]
        ([True, True], ('a', 'Hi.'))
        """
        values: tuple[Any, ...] = _values(self)
        return values if self.score is None else (*values[:-1], self.score.packed())

    @classmethod
    def unpacked(cls, values: tuple[Any, ...]) -> Prediction:
        """The prediction :meth:`packed` gave ``values`` of."""
        pred = object.__new__(cls)  # its fields set at once, as a stored line's are (from_json)
        pred.__dict__.update(zip(_RAW_ORDER, values))
        score = values[-1]
        pred.score = None if score is None else ExampleScore.unpacked(score)
        return pred

    def scored(self) -> ExampleScore:
        """The prediction's score; UnscoredError when it has none (never zeros in its place)."""
        if self.score is None:
            raise UnscoredError(f"example {self.id!r} is not scored: score it first (score_prediction/rescored)")
        return self.score

    def refuse_bad_times(self) -> list[str]:
        """Move stored times that cannot be right (:func:`times_problem`) out of ``segments`` / ``words`` into
        ``extra["refused_segments"]`` / ``["refused_words"]``, with the reason in ``extra["timing_refused"]``, so that
        no table, metric or gate reads them; the text is untouched. Returns the reasons given now.

        >>> pred = Prediction("a", "", "and", audio_s=11.0, words=[{"word": "And", "start": -996.27, "end": -996.2}])
        >>> pred.refuse_bad_times(), pred.words
        (["example a: words refused: word 1 ('And') starts at -996.27 s, before the audio begins"], None)
        """
        reasons = []
        for key in ("segments", "words"):
            items = getattr(self, key)
            problem = None if items is None else times_problem(items, self.audio_s, key[:-1])
            if problem is not None:
                reason = f"example {self.id}: {key} refused: {problem}"
                self.extra.setdefault("timing_refused", {})[key] = reason
                self.extra[f"refused_{key}"] = items
                setattr(self, key, None)
                reasons.append(reason)
        return reasons

    def to_json(self) -> dict[str, Any]:
        """One line of ``predictions.jsonl``: the raw output only (scores are derived, never stored with it)."""
        raw = {f: getattr(self, f) for f in _RAW_ORDER}
        raw["extra"] = dict(self.extra)
        return raw

    def to_row(self) -> dict[str, Any]:
        """The raw fields, then the score's flat fields when scored (a per-example export's row)."""
        return self.to_json() | (self.score.to_fields() if self.score is not None else {})

    @classmethod
    def for_example(cls, example: Example) -> Prediction:
        """The prediction of ``example`` before its hypothesis: its transcript, duration and audio digest
        (what a resume re-checks a stored result against).

        >>> Prediction.for_example(Example("a", b"", "hi", 1.5, extra={"audio_sha256": "ab"})).extra
        {'audio_sha256': 'ab'}
        """
        digest = example.extra.get("audio_sha256")
        extra = {"audio_sha256": digest} if digest else {}
        for key in ("segments", "words"):  # ground-truth timing (seconds), for the timing metrics
            value = example.extra.get(key)
            if value and isinstance(value, list) and all(isinstance(item, dict) for item in value):
                extra[f"true_{key}"] = value  # (a "words" column of plain strings is someone else's data)
        if isinstance(example.extra.get("formatted"), (bool, str)):  # the manifest says whether the text is formatted
            extra["formatted"] = example.extra["formatted"]
        if example.extra.get("keywords"):  # the words that matter (datasets/keywords.py checked them): the metric's
            extra["keywords"] = list(example.extra["keywords"])
        return cls(
            id=example.id,
            transcript=storable_text(example.text),
            hypothesis="",
            audio_s=example.duration_s or 0.0,
            language_label=example.language,
            extra=extra,
        )

    @classmethod
    def failed(cls, example: Example, error: str) -> Prediction:
        """A failed example (the one constructor of failures): counted, with its transcript, never dropped.

        >>> Prediction.failed(Example("a", b"", "hi"), "invalid: no audio").error
        'example a: invalid: no audio'
        """
        pred = cls.for_example(example)
        prefix = f"example {example.id}: "
        pred.status, pred.error = "error", error if error.startswith(prefix) else prefix + error
        return pred

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Prediction:
        """A prediction from one ``predictions.jsonl`` line (fields it lacks take their defaults; unknown ones go
        to ``extra``), unscored: the score fields that lines stored by earlier versions carry are dropped, never
        trusted (every score is computed afresh from the raw output).

        >>> line = Prediction("a", "Hi.", "hi", extra={"k": 1}).to_json()
        >>> Prediction.from_json(line) == Prediction("a", "Hi.", "hi", extra={"k": 1})
        True
        """
        extra = data.get("extra")
        if data.keys() == _RAW_FIELDS and type(extra) is dict and extra.keys().isdisjoint(_EARLIER_EXTRA):
            _refuse_wrong_types(data)
            pred = object.__new__(cls)  # a line as this version writes it (nearly all): its fields as they are
            pred.__dict__.update(data)
            pred.score = None
            if pred.segments is not None or pred.words is not None:
                pred.refuse_bad_times()
            return pred
        raw = {k: v for k, v in data.items() if k not in SCORE_FIELDS}
        _read_earlier_versions(raw)
        if not raw.keys() <= _RAW_FIELDS:
            unknown = {k: raw.pop(k) for k in list(raw) if k not in _RAW_FIELDS}
            given = raw.get("extra")
            raw["extra"] = {**(given if isinstance(given, dict) else {}), **unknown}
        _refuse_wrong_types(raw)
        pred = cls(**raw)
        pred.refuse_bad_times()  # times stored before they were checked (or edited since) never reach a table
        return pred


#: the JSON types each stored field may hold (None allowed where the field is optional); a line holding another is
#: malformed: one error naming the field, never a crash of every report reading the folder
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,),
    "transcript": (str,),
    "hypothesis": (str,),
    "status": (str,),
    "error": (str, type(None)),
    "audio_s": (float, int),
    "infer_s": (float, int),
    "language_label": (str, type(None)),
    "detected_language": (str, type(None)),
    "segments": (list, type(None)),
    "words": (list, type(None)),
    "extra": (dict,),
    "cpu_s": (float, int, type(None)),
    "tokens": (int, type(None)),
    "stream": (list, type(None)),
}


def _refuse_wrong_types(raw: dict[str, Any]) -> None:
    """TypeError naming the first field of a stored line whose value is not of its type (a Boolean is no number),
    or a text that UTF-8 cannot hold (a lone surrogate in its id).

    >>> _refuse_wrong_types({"id": "a", "infer_s": "fast"})
    Traceback (most recent call last):
    ...
    TypeError: field infer_s is 'fast' (str), not float or int
    """
    for name, value in raw.items():
        allowed = _FIELD_TYPES.get(name)
        if allowed is None:
            continue
        if type(value) not in allowed:
            kinds = " or ".join("null" if t is type(None) else t.__name__ for t in allowed)
            raise TypeError(f"field {name} is {str(value)[:40]!r} ({type(value).__name__}), not {kinds}")
    identifier = raw.get("id")
    if isinstance(identifier, str) and storable_text(identifier) != identifier:
        raise TypeError(f"field id {identifier!r} holds characters UTF-8 cannot encode (a lone surrogate)")


def _read_earlier_versions(raw: dict[str, Any]) -> None:
    """Lines written by earlier versions: the transcript was ``reference`` and the ground-truth times
    ``extra["reference_segments"]``/``["reference_words"]``; before the two languages had their own fields,
    ``language`` was the dataset's label and ``extra["language"]`` the detected one.

    >>> raw = {"reference": "hi", "language": "de", "extra": {"language": "en", "reference_words": []}}
    >>> _read_earlier_versions(raw); raw
    {'extra': {'true_words': []}, 'transcript': 'hi', 'language_label': 'de', 'detected_language': 'en'}
    """
    for old, new in (("reference", "transcript"), ("language", "language_label")):
        if old in raw:
            raw.setdefault(new, raw.pop(old))
    extra = raw.get("extra")
    if isinstance(extra, dict) and not extra.keys().isdisjoint(_EARLIER_EXTRA):
        extra = raw["extra"] = dict(extra)
        if "language" in extra:
            raw.setdefault("detected_language", extra.pop("language"))
        for key in ("segments", "words"):
            if f"reference_{key}" in extra:
                extra.setdefault(f"true_{key}", extra.pop(f"reference_{key}"))


_RAW_ORDER = tuple(f.name for f in dataclasses.fields(Prediction) if f.name != "score")
_RAW_FIELDS = frozenset(_RAW_ORDER)
_FIELD_ORDER = (*_RAW_ORDER, "score")
_values = attrgetter(*_FIELD_ORDER)
#: keys of ``extra`` that lines written by earlier versions hold (:func:`_read_earlier_versions`)
_EARLIER_EXTRA = frozenset({"language", "reference_segments", "reference_words"})


#: the roles a dataset column can play (``--audio-column`` …); audio and text are required, id and language optional
COLUMN_ROLES = ("audio", "text", "id", "language", "keywords")


@dataclass(frozen=True)
class ColumnMap:
    """Which column of a manifest (or Hugging Face dataset) holds what, where its names are not the usual ones.

    A role left None is found by its usual names (``audio``, ``path``, ``sentence``…); a role given is read from
    that column only.

    >>> ColumnMap(audio="wav", text="sentence").to_json()
    {'audio': 'wav', 'text': 'sentence'}
    >>> ColumnMap.of({"text": "transcript"}) == ColumnMap(text="transcript"), bool(ColumnMap())
    (True, False)
    """

    audio: str | None = None
    text: str | None = None
    id: str | None = None
    language: str | None = None
    #: the words that matter of each example (a list, or one string split on ``;`` or ``|``): docs/keywords.md
    keywords: str | None = None

    def to_json(self) -> dict[str, str]:
        """The roles given (what run.json records)."""
        return {role: column for role in COLUMN_ROLES if (column := getattr(self, role))}

    def __bool__(self) -> bool:
        return bool(self.to_json())

    @classmethod
    def of(cls, value: ColumnMap | dict[str, str] | None) -> ColumnMap:
        """A ColumnMap from itself, a ``{role: column}`` dict (unknown roles are an error) or None."""
        if value is None or isinstance(value, ColumnMap):
            return value or cls()
        unknown = set(value) - set(COLUMN_ROLES)
        if unknown:
            raise DatasetError(f"unknown column role(s) {', '.join(sorted(unknown))}: use {', '.join(COLUMN_ROLES)}")
        return cls(**value)
