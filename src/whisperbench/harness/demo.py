"""The default evaluation: every installed local implementation on the bundled data, one leaderboard.

The reference is openai-whisper (the offline stand-in for the OpenAI API). Missing implementations
are reported with the pip command that installs them, never as a traceback.
"""

from __future__ import annotations

import logging
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass, field

from ..adapters import DecodingOptions, get_adapter
from ..datasets import bundled_datasets, load_dataset
from ..errors import OptionError, WhisperbenchError
from ..models.resolve import resolve_source
from .longform import LongFormConfig
from .progress import progress
from .runner import RunRequest, run_evaluation

REFERENCE_ADAPTER = "openai-whisper"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DemoSettings:
    """What the demo runs: the model of every row, where the runs go, where the leaderboard goes (default
    ``leaderboard.md`` in ``runs_dir``), threads per implementation, the first ``limit`` examples, short-form only,
    which rows (labels, comma-separated; the reference always runs), slow rows too (``all``), and an
    OpenAI-compatible endpoint as the reference."""

    model: str = "tiny.en"
    runs_dir: str = "runs/demo"
    out: str | None = None
    threads: int | None = None
    limit: int | None = None
    short_only: bool = False
    implementations: str | None = None
    all: bool = False
    reference_endpoint: str | None = None
    reference_model: str = "whisper-1"


@dataclass
class DemoRuns:
    """What the demo ran: the runs made, the reference implementation's runs, the failed examples over all runs,
    and the rows skipped here with why."""

    runs: list[str]
    references: list[str]
    failed: int = 0
    skipped: list[str] = field(default_factory=list)


def _apple_silicon() -> bool:
    return sys.platform == "darwin" and platform.machine() == "arm64"


def _mlx_on_openblas_here() -> str | None:
    """None where mlx[cpu] can use a system OpenBLAS (the adapter's own lookup), else why not."""
    from ..adapters.mlx import blas_library

    try:
        blas_library("openblas")
    except OptionError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class Contender:
    """One implementation the demo runs: its adapter, label and options, and why it is slow or unavailable on this
    machine when it is."""

    adapter: str
    label: str
    options: tuple[str, ...] = ()
    #: None, or why it is left out unless ``--all`` is given (too slow on this platform)
    slow_here: Callable[[], str | None] | None = None
    long_form: str = "native"  # the long-form strategy (see harness.longform)
    isolate: bool = False  # in a child process (e.g. a BLAS bound before MLX is imported)
    #: None, or why it cannot run on this machine at all (``--all`` does not change that)
    unavailable_here: Callable[[], str | None] | None = None


CONTENDERS = (
    Contender("openai-whisper", "openai-whisper"),
    # batched short-form decoding; long-form through the harness's chunked strategy (Whisper JAX's algorithm)
    Contender("openai-whisper", "openai-whisper-batch8-chunked", ("batch_size=8",), long_form="chunked"),
    Contender("faster-whisper", "faster-whisper-fp32", ("compute_type=float32",)),
    Contender("faster-whisper", "faster-whisper-int8", ("compute_type=int8",)),
    Contender("transformers", "transformers"),
    Contender("whisper-cpp", "whisper.cpp-f16", ("quantization=f16",)),
    Contender(
        "mlx",
        "mlx-float32",
        ("dtype=float32",),
        slow_here=lambda: (
            None
            if _apple_silicon()
            else "MLX runs on the CPU here with its wheel's reference BLAS (about 1/20 of openai-whisper's speed); "
            "pass --all to include it"
        ),
    ),
    # Linux: MLX's float32 matrix products in the system OpenBLAS (about 1/3 of openai-whisper's speed)
    Contender(
        "mlx",
        "mlx-float32-openblas",
        ("dtype=float32", "blas=openblas"),
        unavailable_here=_mlx_on_openblas_here,
        isolate=True,
    ),
)
DATASETS = ("tiny-shortform", "tiny-longform")


def _contenders(args: DemoSettings) -> tuple[list[tuple[Contender, str]], str]:
    """(contender, model) pairs to run, and the label of the reference."""
    pairs = [(c, args.model) for c in CONTENDERS]
    reference = REFERENCE_ADAPTER
    if args.reference_endpoint:
        api = Contender("openai-api", f"openai-api {args.reference_model}", (f"base_url={args.reference_endpoint}",))
        pairs, reference = [(api, args.reference_model)] + pairs, api.label
    wanted = args.implementations
    if wanted:
        labels = {label.strip() for label in wanted.split(",") if label.strip()}
        unknown = labels - {c.label for c, _ in pairs}
        if unknown:
            raise OptionError(
                f"--implementations: no demo row called {', '.join(sorted(unknown))}; "
                f"the rows are {', '.join(c.label for c, _ in pairs)}"
            )
        pairs = [(c, model) for c, model in pairs if c.label in labels | {reference}]
    return pairs, reference


def _available(contenders: list[tuple[Contender, str]], args: DemoSettings) -> tuple[list, list[str]]:
    """The rows that can run here, and why each other one is skipped (slow on this platform, not installed)."""
    available, skipped = [], []
    for contender, model in contenders:
        adapter = get_adapter(contender.adapter)
        slow = contender.slow_here() if contender.slow_here and not args.all else None
        slow = slow or (contender.unavailable_here() if contender.unavailable_here else None)
        if not slow and adapter.missing():
            slow = f"not installed: pip install 'whisperbench[{adapter.extra}]'"
        if slow:
            skipped.append(f"{contender.label}: {slow}")
            log.warning("skip %s: %s", contender.label, slow)
        else:
            available.append((contender, model))
    return available, skipped


def run_demo(args: DemoSettings) -> DemoRuns:
    """Every installed implementation on the bundled sets; the runs it made (``api.demo`` writes their
    leaderboard). No bundled data, no implementation, or a model that is not there: WhisperbenchError."""
    bundled = bundled_datasets()
    names = [d for d in DATASETS if d in bundled and not (args.short_only and d.endswith("longform"))]
    if not names:
        raise WhisperbenchError("the bundled datasets are missing (expected datasets/tiny/*/manifest.jsonl)")
    contenders, reference_label = _contenders(args)
    resolve_source(args.model)  # a model that is not there stops the demo before any row (ModelError, exit 2)
    available, skipped = _available(contenders, args)
    if not available:
        raise WhisperbenchError(
            "demo: no implementation can run here (see the skips above): pip install 'whisperbench[local]'"
        )
    if not any(c.label == reference_label for c, _ in available):
        log.warning("the reference (%s) is not installed, so QoI cannot be computed", reference_label)
    threads = [f"threads={args.threads}"] if args.threads else []
    failures, made, references = 0, [], []
    for dataset in names:
        checked = load_dataset(dataset, limit=args.limit)
        for contender, model in available:
            request = RunRequest(
                adapter=contender.adapter,
                model=model,
                dataset=dataset,
                runs_dir=args.runs_dir,
                name=f"{contender.label}_{model}_{dataset}".replace(" ", "_"),
                limit=args.limit,
                label=contender.label,
                decoding=DecodingOptions.from_pairs(list(contender.options) + threads),
                long_form=LongFormConfig(contender.long_form),
                isolate=contender.isolate,
            )
            with progress(len(checked.dataset), f"{contender.label:<20} {dataset}") as bar:
                result = run_evaluation(
                    request, progress=bar.update, checked=checked, begin=getattr(bar, "begin", None)
                )
            made.append(result.store.name)
            if contender.label == reference_label:
                references.append(result.store.name)
            s = result.summary
            failures += s.num_failed
            wer = "n/a" if s.wer is None else f"{s.wer:.2f}%"
            rtfx = "n/a" if s.rtfx is None else f"{s.rtfx:.1f}"
            log.info("%-20s %-15s WER %7s  RTFx %6s  failed %d", contender.label, dataset, wer, rtfx, s.num_failed)
    return DemoRuns(made, references, failures, skipped)
