"""What several commands share: the run options, dataset columns, thresholds, the paired tests' options, printing."""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from ..core.ranges import CONFIDENCE_PERCENT
from ..scoring.normalize import normalizer_names


def finite(text: str) -> float:
    """The type of every number option: a finite float (``nan`` and ``inf`` are refused by argparse, exit 2).

    >>> finite("2.5")
    2.5
    """
    value = float(text)  # a ValueError: argparse says "invalid finite value"
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text}")
    return value


def whole(text: str) -> int:
    """The type of every count option: an integer, 0 or more (a negative count is refused, exit 2).

    >>> whole("3"), whole("1e20")
    (3, 100000000000000000000)
    """
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)  # 1e20: a whole number written as a float
        except ValueError:
            number = math.nan
        if not (math.isfinite(number) and number == int(number)):
            raise argparse.ArgumentTypeError(f"expected a whole number (0 or more), got {text}") from None
        value = int(number)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number (0 or more), got {text}")
    return value


def confidence_fraction(percent: float | None) -> float | None:
    """``--confidence`` (a percentage, e.g. 95) as the fraction the API takes; refused outside 50 to 99.9 %."""
    return None if percent is None else round(CONFIDENCE_PERCENT.check("--confidence", percent) / 100.0, 9)


def print_json(data) -> None:
    """Print ``data`` as indented JSON (non-ASCII kept; dates and paths as strings)."""
    print(json.dumps(data, indent=2, ensure_ascii=False, default=str))


def fmt(value, digits: int = 2) -> str:
    """A number with ``digits`` decimals, or ``n/a`` for None."""
    return "n/a" if value is None else f"{value:.{digits}f}"


def pct(value, digits: int = 2) -> str:
    """A percentage with its sign (``12.50%``), or ``n/a`` (never ``n/a%``) for None.

    >>> pct(12.5), pct(None)
    ('12.50%', 'n/a')
    """
    return "n/a" if value is None else f"{value:.{digits}f}%"


def add_run_args(p: argparse.ArgumentParser) -> None:
    """The options ``run`` and ``score`` share: where the run goes, which examples, scoring, columns."""
    p.add_argument("--runs-dir", default="runs", help="where run folders go (default: runs/)")
    p.add_argument(
        "--name", help="run name (default: ADAPTER_MODEL_DATASET, then each option set, e.g. _compute_type-int8)"
    )
    p.add_argument("--limit", type=whole, help="only the first N examples")
    p.add_argument("--skip-invalid", action="store_true", help="record invalid examples as failed and go on")
    p.add_argument("--normalizer", choices=normalizer_names(), help="default: english for English data")
    p.add_argument("--form", choices=["short", "long"], help="override the inferred dataset form")
    p.add_argument("--dataset-name", help="name to show for the dataset")
    add_column_args(p)
    p.add_argument(
        "--keywords",
        metavar="FILE",
        help="terms that matter, one a line, given to every example beside its keywords column (docs/keywords.md)",
    )
    add_threshold_arg(p)
    p.add_argument("--label", help="name of the implementation in reports (default: adapter and its options)")
    p.add_argument(
        "--scoring-workers",
        type=whole,
        metavar="N",
        help="processes that score a run of 20,000 predictions or more (default: the CPUs this process may use less "
        "those other processes keep busy; 1: this process alone)",
    )
    p.add_argument("--overwrite", action="store_true", help="replace an existing run of a different configuration")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")


def add_runs_dir(p: argparse.ArgumentParser) -> None:
    """``--runs-dir``: the folder of runs a command reads (default ``runs``)."""
    p.add_argument("--runs-dir", default="runs", help="folder holding the runs (default: %(default)s)")


def add_threshold_arg(p: argparse.ArgumentParser) -> None:
    """``--threshold METRIC.NAME=VALUE`` (repeatable): a metric's threshold, kept with the run."""
    p.add_argument(
        "--threshold",
        action="append",
        metavar="METRIC.NAME=VALUE",
        help="a metric's threshold, e.g. hallucination.burst_words=4 (repeatable; defaults and names: "
        "docs/robustness.md); kept with the run's summary and used by compare and gate",
    )


def metric_options(args: argparse.Namespace) -> dict:
    """The ``--threshold`` values as ``{metric: {name: value}}`` (each metric checks its own)."""
    from ..scoring.metrics import parse_metric_options

    return parse_metric_options(args.threshold or [])


def add_column_args(p: argparse.ArgumentParser) -> None:
    """``--audio-column`` and friends: a manifest whose columns have other names."""
    group = p.add_argument_group(
        "dataset columns",
        "for a manifest (.jsonl, .csv, .tsv) or hf: dataset whose columns "
        "have other names than the usual ones (audio, text, id, language)",
    )
    group.add_argument("--audio-column", metavar="COLUMN", help="the column of audio paths (e.g. wav, clip_path)")
    group.add_argument("--text-column", metavar="COLUMN", help="the column of transcripts (e.g. words, label)")
    group.add_argument(
        "--id-column", metavar="COLUMN", help="the column of example ids (default: id, else the file name)"
    )
    group.add_argument("--language-column", metavar="COLUMN", help="the column of language labels (e.g. lang_tag)")
    group.add_argument(
        "--keywords-column",
        metavar="COLUMN",
        help="the column of each example's words that matter (default: keywords; a list, or a string split on "
        "; or |): the keywords metric, docs/keywords.md",
    )


def columns(args):
    """The ``--*-column`` options as a :class:`~whisperbench.types.ColumnMap`."""
    from ..types import ColumnMap

    return ColumnMap(
        audio=args.audio_column,
        text=args.text_column,
        id=args.id_column,
        language=args.language_column,
        keywords=args.keywords_column,
    )


def print_summary(result) -> None:
    """A run's result in a few lines: counts, resumed settings, warnings, WER and speed."""
    s = result.summary
    print(
        f"run {result.store.path}: {s.num_examples} examples ({result.computed} computed, "
        f"{result.resumed} resumed{f', {result.invalid} invalid' if result.invalid else ''}), {s.num_failed} failed"
    )
    for note in result.notes:
        print(f"  resumed with {note}")
    for warning in result.warnings:  # said before the run too; repeated beside the figures it concerns
        print(f"  warning: {warning}")
    if result.stale:
        reasons = sorted(set(result.stale.values()))
        print(
            f"  redone: {len(result.stale)} stored result(s) no longer matched ({'; '.join(reasons)}): "
            f"{', '.join(list(result.stale)[:10])}{' …' if len(result.stale) > 10 else ''}"
        )
    print(
        f"  WER {pct(s.wer)}  (S {s.substitutions}, D {s.deletions}, I {s.insertions}, "
        f"N {s.transcript_words})  RTFx {fmt(s.rtfx, 1)}  normalizer {s.normalizer}  form {s.form}"
    )
    if s.rtfx_reliable is False and s.rtfx is not None:  # no speed measured: nothing to doubt
        print(
            f"  RTFx unreliable: the machine was busy ({s.rtfx_unreliable_why}); compare speeds measured "
            "on a quiet machine"
        )


def execute(request, as_json: bool) -> int:
    """Run ``request`` with a progress bar and print its summary (JSON with ``as_json``); exit code 0."""
    from ..api import execute

    result = execute(request, show_progress=True)
    if as_json:
        print_json(result.summary.to_dict())
    else:
        print_summary(result)
    return 0


def significance_args(args) -> dict[str, Any]:
    """The paired-significance keywords of ``api.compare`` / ``api.gate`` from the shared options."""
    return {
        "block_by": args.block_by,
        "block_dataset": args.block_dataset,
        "resamples": args.resamples,
        "seed": args.seed,
    }


def significance_options(p: Any) -> None:
    """The paired tests' options (compare and gate; docs/statistics.md)."""
    p.add_argument(
        "--block-by",
        metavar="COLUMN",
        help="bootstrap whole blocks of examples sharing this manifest column's value (e.g. speaker): "
        "every interval then resamples blocks (read from the reference run's dataset)",
    )
    p.add_argument(
        "--block-dataset",
        metavar="SPEC",
        help="with --block-by: read the column from this dataset instead of the run's own",
    )
    p.add_argument("--resamples", type=whole, default=2000, help="bootstrap resamples (default %(default)s)")
    p.add_argument(
        "--seed", type=whole, default=0, help="bootstrap seed (default %(default)s): same seed, same interval"
    )


def names(text: str | None) -> list[str] | None:
    """A comma-separated list as names (blanks dropped), or None when not given."""
    return [name.strip() for name in text.split(",") if name.strip()] if text else None
