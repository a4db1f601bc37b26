"""Which weights a stored run used, and whether two runs used the same ones.

Read from run.json (``adapter_info.weights``, written by :func:`whisperbench.models.describe_source`):
the source's sha256 (same file), its fingerprint (the token embedding rounded to float16: the same
weights in any format), and the precision the implementation ran them in.

>>> a = RunInfo(adapter_info={"weights": {"source_sha256": "1", "fingerprint": "f", "dtype": "float16"},
...                            "settings": {"compute_type": "float32"}})
>>> b = RunInfo(adapter_info={"weights": {"source_sha256": "2", "fingerprint": "f", "dtype": "float32"},
...                            "settings": {"dtype": "float32"}})
>>> weights_relation(a, b)
'same weights (another format)'
>>> weights_relation(RunInfo(adapter_info={"weights": {"source_sha256": "1"}}),
...                  RunInfo(adapter_info={"weights": {"source_sha256": "1"}, "settings": {"compute_type": "int8"}}))
'same weights, int8 compute'
"""

from __future__ import annotations

from ..core.languages import english_only_model, other_than_english
from ..models.formats import find_format
from ..store.run_info import RunInfo
from ..store.runs import StoredRun

#: adapter settings that choose the precision weights run in
PRECISION_SETTINGS = ("compute_type", "quantization", "precision", "dtype")


def precision_of(info: RunInfo) -> str | None:
    """The precision the run computed in: a quantized model's own type, else the adapter's setting."""
    weights = info.weights
    if weights.get("quantized"):
        return weights.get("dtype")
    settings = info.adapter_info.get("settings") or {}
    for key in PRECISION_SETTINGS:
        if settings.get(key):
            return str(settings[key])
    return None  # the implementation's one precision: nothing to compare


def model_label(info: RunInfo) -> str:
    """The model's name as the leaderboard shows it (its quantization when it is one)."""
    weights = info.weights
    name = weights.get("name") or str(info.model).rstrip("/").split("/")[-1]
    return f"{name} ({weights['dtype']})" if weights.get("quantized") and weights.get("dtype") not in name else name


def size_mb(info: RunInfo) -> float | None:
    """Size of the weights as the implementation loaded them (a converted copy, a quantized variant)."""
    weights = info.weights
    return weights.get("loaded_size_mb", weights.get("size_mb"))


def fingerprinted(fmt: str | None) -> bool:
    """Whether weights of format ``fmt`` get a fingerprint (its :class:`~whisperbench.models.formats.Format` says;
    True for an unrecorded or unknown format: then two different fingerprints mean different weights).

    >>> fingerprinted("ggml"), fingerprinted("coreml"), fingerprinted(None)
    (True, False, True)
    """
    known = find_format(fmt) if fmt else None
    return known is None or known.embedding is not None


def weights_relation(reference: RunInfo, candidate: RunInfo) -> str:
    """'same weights', 'same weights (another format)', '… in another precision', '…, int8 compute' (one side's
    compute type, the other's unrecorded), 'different weights',
    'cannot tell' (a quantized model, or a format without a fingerprint such as Core ML: its values are not
    the original's) or 'unknown' (runs recorded
    before weights were described, or adapters without weights)."""
    a, b = reference.weights, candidate.weights
    if not a.get("source_sha256") or not b.get("source_sha256"):
        return "unknown"
    same_file = a["source_sha256"] == b["source_sha256"]
    same_values = same_file or (a.get("fingerprint") and a.get("fingerprint") == b.get("fingerprint"))
    if not same_values:
        quantized = [w["dtype"] for w in (a, b) if w.get("quantized")]
        if quantized:
            return f"cannot tell: {'/'.join(quantized)}-quantized weights have no fingerprint"
        unprinted = [w["format"] for w in (a, b) if not fingerprinted(w.get("format"))]
        if unprinted:  # Core ML packages: their weights are not the originals' values
            return f"cannot tell: {'/'.join(unprinted)} weights have no fingerprint"
        return "different weights"
    where = "" if same_file else " (another format)"
    pa, pb = precision_of(reference), precision_of(candidate)
    if pa and pb and pa != pb:
        return f"same weights{where}, in another precision ({pa} vs {pb})"
    if pb and not pa:  # e.g. faster-whisper compute_type=int8 against openai-whisper: not the same arithmetic
        return f"same weights{where}, {pb} compute"
    if pa and not pb:
        return f"same weights{where}, the reference in {pa} compute"
    return f"same weights{where}"


def english_only_on(info: RunInfo, languages: list[str]) -> list[str]:
    """The non-English ``languages`` (a run's labels) that the run's English-only model met, or [] (a multilingual
    model, or English labels only). English-only: the weights' vocabulary says so, else a name ending in ``.en``.

    >>> english_only_on(RunInfo(model="tiny.en"), ["de", "en"]), english_only_on(RunInfo(model="base"), ["de"])
    (['de'], [])
    """
    multilingual = info.weights.get("multilingual")
    if not english_only_model(info.model, multilingual if isinstance(multilingual, bool) else None):
        return []
    return other_than_english(languages)


def english_only_note(languages: list[str]) -> str:
    """The table's mark for an English-only model on labels in ``languages`` ("" when there are none)."""
    return f"⚠ English-only model, labels in {', '.join(languages)}" if languages else ""


def english_only_languages(run: StoredRun) -> list[str]:
    """The languages other than English among ``run``'s labels, when its model is English-only (else [])."""
    import pyarrow.compute as pc

    labels = pc.unique(run.score_table()["language_label"]).to_pylist()
    return english_only_on(run.meta, [name for name in labels if name])
