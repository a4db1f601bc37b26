"""``whisperbench align``: word-level ground truth for a short-form dataset by forced alignment
(``api.align_words``)."""

from __future__ import annotations

from typing import Any

from .common import whole


def command(args) -> int:
    """``whisperbench align``: a manifest with each row's forced-aligned transcript words."""
    from ..api import align_words

    count = align_words(args.dataset, args.out, model=args.model, limit=args.limit)
    print(
        f"wrote {count} row(s) with forced-aligned words to {args.out} (model {args.model}; see docs/timestamps.md "
        "for what such times are worth)"
    )
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench align`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser(
        "align",
        help="word times for a short-form dataset: openai-whisper's DTW aligner run on each "
        "row's transcript (ground truth where a dataset has none)",
    )
    p.add_argument("--dataset", required=True, help="manifest, folder, bundled name or hf:NAME[:CONFIG]:SPLIT")
    p.add_argument(
        "--out", required=True, help="manifest to write (JSONL: the rows with `words`, audio paths absolute)"
    )
    p.add_argument("--model", default="base", help="the aligning checkpoint (default: base; any --model form)")
    p.add_argument("--limit", type=whole, help="the first N rows only")
    p.set_defaults(func=command)
