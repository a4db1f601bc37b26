"""``summary.json`` as a typed record: :class:`Summary`, with ``to_dict`` / ``from_dict`` and a schema version.

On disk the summary stays one flat JSON object (scripts read ``summary.json["wer"]`` or
``summary.json["hallucination"]["loops"]``); in Python it is a record with one attribute per figure:
the scores :func:`~whisperbench.scoring.figures.summarize` computes, what the harness measured while it ran
(``load_s``, ``peak_rss_mb``, ``wall_s``…), each registered metric's value under ``metrics`` (see
:mod:`whisperbench.scoring.metrics`) and an implementation's own figures under ``extra`` (``compile_s``,
``cost_estimate_usd``…).

Schema versions: 1 is every summary written before the version was recorded (the same keys, some of them
absent in older stores: they read as None); 2 adds ``schema_version``; 3 names the human text "transcript"
(``transcript_words``, ``transcript_characters``, ``empty_transcripts``: :data:`RENAMED_IN_3`, read from older
summaries under their old names). A summary written by a newer whisperbench is refused with a clear message
rather than misread.

>>> s = Summary.from_dict({"wer": 12.5, "num_examples": 4, "num_failed": 1, "form": "short",
...                        "normalizer": "english", "hallucination": {"loops": 0}, "compile_s": 3.0})
>>> s.wer, s.num_ok, s.metrics["hallucination"], s.extra, s.schema_version
(12.5, None, {'loops': 0}, {'compile_s': 3.0}, 3)
>>> Summary.from_dict(s.to_dict()) == s
True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from .metrics import Metric, registered, reserve_names

SCHEMA_VERSION = 3
#: keys of summary.json that schema versions before 3 named after the "reference" (the human transcript)
RENAMED_IN_3 = {
    "reference_words": "transcript_words",
    "reference_characters": "transcript_characters",
    "empty_references": "empty_transcripts",
}

#: figures only an invocation that transcribed examples can measure (a resume that computes none keeps them)
MEASURED_BY_COMPUTING = ("wall_s", "harness_overhead_pct", "rtfx_reliable", "rtfx_unreliable_why", "first_result_s")
#: figures the harness adds to the scores (rescoring keeps them as they were)
MEASURED = ("load_s", "warmup_s", "load_warm_s", "peak_rss_mb", "model_size_mb") + MEASURED_BY_COMPUTING
#: optional keys left out of ``summary.json`` when absent (no language labels, no detected languages)
_OMITTED_WHEN_ABSENT = (
    "languages",
    "macro_error_rate",
    "unlabelled_examples",
    "language_id",
    "cpu_s",
    "core_s_per_audio_s",
    "tokens",
    "ms_per_token",
    "first_result_s",
    "load_warm_s",
)


class SummaryError(ValueError):
    """A ``summary.json`` this version cannot read."""


@dataclass
class Summary:
    """One run's dataset-level figures (``summary.json``).

    WER and CER are percentages over all examples, failed ones as empty hypotheses (``wer_ok``: the successful
    ones only); ``rtfx`` = Σ audio_s / Σ infer_s over successful examples.
    """

    wer: float | None = None
    wer_ok: float | None = None
    cer: float | None = None
    num_examples: int = 0
    num_ok: int | None = None
    num_failed: int = 0
    substitutions: int | None = None
    deletions: int | None = None
    insertions: int | None = None
    hits: int | None = None
    transcript_words: int | None = None
    transcript_characters: int | None = None
    char_errors: int | None = None
    empty_transcripts: int | None = None
    audio_s: float | None = None
    infer_s: float | None = None
    rtfx: float | None = None
    latency_p50_s: float | None = None
    latency_p90_s: float | None = None
    latency_p99_s: float | None = None
    #: Σ CPU seconds of the calls over the successful examples that have them, and that per audio second
    #: (Picovoice's core-hour per audio hour); absent where no CPU time was measured
    cpu_s: float | None = None
    core_s_per_audio_s: float | None = None
    #: Σ tokens decoded over the successful examples whose implementation reports them, and their Σ inference time
    #: per token in milliseconds; absent where no implementation reported tokens
    tokens: int | None = None
    ms_per_token: float | None = None
    form: str = "short"
    normalizer: str = "english"
    #: per labelled language: examples, failures, WER, CER, the headline metric and its value
    languages: dict[str, dict[str, Any]] = field(default_factory=dict)
    macro_error_rate: float | None = None
    unlabelled_examples: int | None = None
    #: language identification against the labels (the model chose the language)
    language_id: dict[str, Any] | None = None
    #: each registered metric's value by name (``hallucination``, ``timing``); absent where it does not apply
    metrics: dict[str, Any] = field(default_factory=dict)
    load_s: float | None = None
    warmup_s: float | None = None
    #: ``--warm-load``: the model loaded once more in the same process after the examples (the library imported,
    #: the weights in the page cache): what a service pays to reload a model; ``load_s`` - this is the cold share
    load_warm_s: float | None = None
    peak_rss_mb: float | None = None
    model_size_mb: float | None = None
    wall_s: float | None = None
    harness_overhead_pct: float | None = None
    rtfx_reliable: bool | None = None
    rtfx_unreliable_why: str | None = None
    #: a fresh process's wait for its first transcript: the model's load (imports included) + warm-up + the first
    #: computed example's inference; None where this invocation computed nothing
    first_result_s: float | None = None
    #: figures an implementation adds (``Adapter.summary_fields``: compile time, API cost…)
    extra: dict[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The flat ``summary.json`` object (metrics and extra figures at the top level, as scripts read them)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "load_s":  # the metrics after the scores, before what the harness measured
                out.update({k: v for k, v in self.metrics.items() if k not in SUMMARY_FIGURES})  # never a figure
            if f.name in ("metrics", "extra", "schema_version") or (
                f.name in _OMITTED_WHEN_ABSENT and value in ({}, None)
            ):
                continue
            out[f.name] = value
        out.update({k: v for k, v in self.extra.items() if k not in out})
        out["schema_version"] = self.schema_version
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "summary.json") -> Summary:
        """Read a stored summary of any schema version up to :data:`SCHEMA_VERSION` (missing figures: None)."""
        version = data.get("schema_version", 1)
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise SummaryError(f"{where}: schema_version must be a whole number from 1, not {version!r}")
        if version > SCHEMA_VERSION:
            raise SummaryError(
                f"{where}: schema version {version!r} is newer than this whisperbench reads "
                f"({SCHEMA_VERSION}); upgrade whisperbench"
            )
        if version < 3:
            data = {RENAMED_IN_3.get(k, k): v for k, v in data.items()}
        names = SUMMARY_FIGURES
        metric_names = {m.name for m in registered()} - names  # WER and CER are figures of their own
        known = {k: v for k, v in data.items() if k in names}
        metrics = {k: v for k, v in data.items() if k in metric_names}
        extra = {k: v for k, v in data.items() if k not in names and k not in metric_names and k != "schema_version"}
        if known.get("languages") is None:
            known.pop("languages", None)
        return cls(**known, metrics=metrics, extra=extra)

    def value_of(self, metric: Metric) -> dict[str, Any] | None:
        """``metric``'s stored value: its object under ``metrics``, or for a top-level metric (WER, CER) its
        figures (None where the run has no value).

        >>> from whisperbench.scoring.metrics import metric_named
        >>> Summary(wer=12.5, transcript_words=8).value_of(metric_named("wer"))
        {'wer': 12.5, 'transcript_words': 8}
        """
        if not metric.top_level:
            return self.metrics.get(metric.name)
        value = {key: getattr(self, key) for key in metric.value_of({}) or {}}
        return value if any(v is not None for v in value.values()) else None

    def with_measurements(self, other: Summary | None, names: tuple[str, ...] = MEASURED) -> Summary:
        """This summary with ``other``'s measured figures (``names``) and implementation figures, for a rescore
        or a resume that computed nothing (None: unchanged)."""
        if other is None:
            return self
        return dataclasses.replace(
            self, extra={**other.extra, **self.extra}, **{name: getattr(other, name) for name in names}
        )


#: the figures a summary holds by name (its fields but the metrics' and the implementation's maps and the version)
SUMMARY_FIGURES = frozenset(f.name for f in dataclasses.fields(Summary)) - {"metrics", "extra", "schema_version"}
reserve_names(SUMMARY_FIGURES | {"metrics", "extra", "schema_version"})  # no plug-in metric may take their place
