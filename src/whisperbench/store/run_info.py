"""run.json as a typed record: what a run *is* (its spec, the only resume identity) and how it was *executed*.

Keys this version does not know (written by a newer one, or by hand) are kept in ``extra`` and written
back, so reading and rewriting a run never loses a field.

>>> info = RunInfo.from_dict({"adapter": "faster-whisper", "model": "tiny.en", "decoding": {"threads": 2},
...                          "dataset": {"name": "qa", "form": "short"}, "note": "kept"})
>>> info.dataset.name, info.extra, info.to_dict()["note"]
('qa', {'note': 'kept'}, 'kept')
>>> info.identity() == RunInfo.from_dict(info.to_dict() | {"decoding": {"threads": 8}}).identity()
True
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


def _split(cls: type, data: dict) -> tuple[dict, dict]:
    names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
    return {k: v for k, v in data.items() if k in names}, {k: v for k, v in data.items() if k not in names}


@dataclass
class DatasetInfo:
    """The dataset a run evaluated: name, where it came from, its form and content hash, how many examples."""

    name: str = "?"
    source: str | None = None
    form: str = "short"
    content_hash: str = ""
    num_examples: int | None = None  # valid and invalid examples
    num_invalid: int = 0
    limit: int | None = None
    #: which column held what, where mapped (``--audio-column`` …: ``{"audio": "wav", "text": "sentence"}``)
    columns: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """The dataset part of run.json."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        return data | self.extra

    @classmethod
    def from_dict(cls, data: dict | None) -> DatasetInfo:
        """Read run.json's dataset part (None or missing keys: defaults)."""
        known, extra = _split(cls, data or {})
        known["columns"] = known.get("columns") or {}
        return cls(**known, extra=extra)


@dataclass
class RunInfo:
    """One run's run.json."""

    # the run spec: a resume must share it
    adapter: str = "?"
    model: str = "?"
    label: str | None = None
    variant: str | None = None  # the sweep's name for the options that make a compressed variant
    decoding: dict[str, Any] = field(default_factory=dict)
    normalizer: str = "english"
    long_form: dict | None = None
    dataset: DatasetInfo = field(default_factory=DatasetInfo)
    # how this invocation executed it (recorded, never part of the identity)
    run_id: str | None = None  # made when the run is first started, kept by resumes (a copy keeps it too)
    status: str = "running"
    backend: str | None = None
    workers: int | None = None
    threads_per_worker: int | None = None
    execution: dict[str, Any] = field(default_factory=dict)
    machine: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, Any] = field(default_factory=dict)
    started_at: str | None = None
    first_started_at: str | None = None
    finished_at: str | None = None
    source_digest: str | None = None
    stale_redone: int = 0
    # measured
    adapter_info: dict[str, Any] = field(default_factory=dict)
    machine_load: dict[str, Any] = field(default_factory=dict)
    backend_info: dict | None = None
    load_s: float | None = None
    warmup_s: float | None = None
    load_warm_s: float | None = None  # --warm-load: the model loaded again in the same process
    peak_rss_mb: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """run.json as written (with the fields of this version, unknown ones kept)."""
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        data["dataset"] = self.dataset.to_dict()
        if data["backend_info"] is None:
            del data["backend_info"]
        return data | self.extra

    @classmethod
    def from_dict(cls, data: dict | None) -> RunInfo:
        """Read run.json (any version this one wrote or reads; missing keys take their defaults)."""
        known, extra = _split(cls, data or {})
        known["dataset"] = DatasetInfo.from_dict(known.get("dataset"))
        for key in ("decoding", "execution", "machine", "versions", "adapter_info", "machine_load"):
            if known.get(key) is None:
                known.pop(key, None)
        return cls(**known, extra=extra)

    @property
    def weights(self) -> dict:
        """What the adapter recorded about its weights (format, sha256, fingerprint, what it loaded)."""
        return self.adapter_info.get("weights") or {}

    def identity(self) -> dict:
        """What a stored run must share with a request to be resumed by it (execution settings aside)."""
        # runs stored before strategies existed have no long_form: their long-form audio went natively
        long_form = self.long_form or ({"strategy": "native"} if self.dataset.form == "long" else None)
        # threads change how fast a run goes, not what it is: another thread count resumes the run
        # runs stored before word timing existed had it off
        # … and before vocabulary prompting existed, no example was prompted with its keywords
        decoding = {"word_timestamps": False, "prompt_from_keywords": False} | {
            k: v for k, v in self.decoding.items() if k != "threads"
        }
        return {
            "adapter": self.adapter,
            "model": self.model,
            "normalizer": self.normalizer,
            "decoding": decoding,
            "long_form": long_form,
            "dataset_source": self.dataset.source,
        }


def identity_differences(
    stored: RunInfo, requested: RunInfo, other: str = "the stored run", keys: tuple[str, ...] | None = None
) -> list[str]:
    """What differs between two runs' identities, one setting each, with both values (what a refused resume says;
    ``other`` names ``stored``; ``keys``: only these parts of the identity).

    >>> old = RunInfo(model="tiny.en", decoding={"beam_size": 5, "temperature": 0.0})
    >>> identity_differences(old, RunInfo(model="tiny.en", decoding={"beam_size": 1, "temperature": 0.0}))
    ['decoding beam_size: 1 (the stored run: 5)']
    >>> identity_differences(old, RunInfo(model="base", decoding={"beam_size": 5, "temperature": 0.0}))
    ["model: 'base' (the stored run: 'tiny.en')"]
    >>> identity_differences(RunInfo(decoding={"extra": {"compute_type": "int8"}}), RunInfo(decoding={"extra": {}}))
    ["decoding extra.compute_type: None (the stored run: 'int8')"]
    """
    parts = lambda info: {k: v for k, v in info.identity().items() if keys is None or k in keys}  # noqa: E731
    before, now = _flat(parts(stored)), _flat(parts(requested))
    return [
        f"{key}: {now.get(key)!r} ({other}: {before.get(key)!r})"
        for key in list(now) + [k for k in before if k not in now]
        if now.get(key) != before.get(key)
    ]


def _flat(data: dict, prefix: str = "") -> dict[str, Any]:
    """Nested settings as one level: ``{"decoding": {"extra": {"a": 1}}}`` -> ``{"decoding extra.a": 1}``."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{prefix}{'.' if prefix and ' ' in prefix else ' ' if prefix else ''}{key}"
        if isinstance(value, dict):  # an empty one holds no setting
            flat.update(_flat(value, name))
        else:
            flat[name] = value
    return flat
