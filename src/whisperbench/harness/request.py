"""What defines a run: :class:`RunRequest` (the CLI's ``run`` arguments), checked when it is made."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..adapters import DecodingOptions
from ..datasets.hypotheses import read_rows
from ..datasets.keywords import read_keywords_file
from ..errors import OptionError
from ..scoring.metrics import checked_options
from ..types import ColumnMap
from .longform import LongFormConfig
from .retry import DEFAULT_ATTEMPTS


@dataclass
class RunRequest:
    """Everything that defines a run (the CLI's ``run`` arguments)."""

    adapter: str
    model: str
    dataset: str
    runs_dir: str = "runs"
    name: str | None = None
    decoding: DecodingOptions = field(default_factory=DecodingOptions)
    limit: int | None = None
    workers: int = 1
    #: processes scoring a run of PARALLEL_MIN (20,000) predictions or more: default the idle cores this process may
    #: use (scoring.engine.pool_size); 1: this process alone
    scoring_workers: int | None = None
    skip_invalid: bool = False
    retry_failed: bool = False
    normalizer: str | None = None
    form: str | None = None
    dataset_name: str | None = None
    columns: ColumnMap = field(default_factory=ColumnMap)  # which manifest column holds what (--audio-column …)
    #: a file of terms that matter, one a line, given to every example (``--keywords``; docs/keywords.md)
    keywords: str | None = None
    label: str | None = None
    variant: str | None = None  # the sweep's name for the adapter options that make a compressed variant
    refresh: bool = False  # adapters that cache results (API references) bypass their cache
    warmup: bool = True
    #: after the examples, close the model and load it once more in this process, timed (``load_warm_s``: imports
    #: done, weights in the page cache); in-process runs only
    warm_load: bool = False
    overwrite: bool = False
    long_form: LongFormConfig = field(default_factory=LongFormConfig)  # how long-form audio reaches the adapter
    isolate: bool = False  # run the adapter in a child process: a native crash fails one example
    timeout_s: float | None = None  # per adapter call; a child that does not answer in time is killed
    backend: str = "in-process"  # in-process (a process pool when workers > 1), process-pool or ray
    address: str | None = None  # ray: the cluster to join (default: a local one started for the run)
    runtime_env: str | None = None  # ray: the workers' runtime_env, JSON or a JSON/YAML file (harness/ray_env.py)
    ray_env: tuple[str, ...] = ()  # ray: names of the driver's variables forwarded to the workers (values never stored)
    attempts: int = DEFAULT_ATTEMPTS  # tries per example whose worker dies, on every backend (harness/retry.py)
    #: options of the registered metrics, e.g. {"hallucination": {"burst_words": 4}} (``--threshold``)
    metric_options: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Counts and limits a run cannot mean: refused before anything is stored."""
        bad = [
            f"{name} {value} (at least {least})"
            for name, value, least in (
                ("workers", self.workers, 1),
                ("scoring_workers", self.scoring_workers, 1),
                ("limit", self.limit, 1),
                ("timeout_s", self.timeout_s, 0.001),
                ("attempts", self.attempts, 1),
            )
            if value is not None and value < least
        ]
        if bad:
            raise OptionError(f"run: {', '.join(bad)}")
        self.metric_options = checked_options(self.metric_options)  # typed, unknown names refused
        if self.keywords is not None:
            read_keywords_file(self.keywords)  # a missing or empty file refused before anything runs

    def keyword_terms(self) -> list[str]:
        """The terms of the ``--keywords`` file (none without one)."""
        return read_keywords_file(self.keywords) if self.keywords is not None else []


def score_request(
    hypotheses: str | Path, dataset: str | Path, *, runs_dir: str | Path = "runs", **settings: Any
) -> RunRequest:
    """The run request that scores a hypotheses file (``{"id", "hypothesis"}`` JSON lines); warns (logging) about
    ids the dataset lacks. Missing ids become failed examples, counted."""
    settings["columns"] = ColumnMap.of(settings.get("columns"))
    read_rows(str(hypotheses))  # a bad file is refused before the dataset is read (its ids: the runner warns)
    settings["label"] = settings.get("label") or f"recorded {Path(hypotheses).stem}"
    return RunRequest(
        adapter="recorded",
        model=str(Path(hypotheses).resolve()),
        dataset=str(dataset),
        runs_dir=str(runs_dir),
        decoding=DecodingOptions(threads=1),  # nothing decodes: no 0.2 s sampling of the machine's load for threads
        retry_failed=True,
        warmup=False,
        **settings,
    )
