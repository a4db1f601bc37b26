"""``whisperbench demo``: the offline default evaluation on the bundled data."""

from __future__ import annotations

from typing import Any

from .common import whole


def command(args) -> int:
    """``whisperbench demo``: the default evaluation on the bundled sets; exit 1 when an example failed."""
    import dataclasses

    from ..api import demo
    from ..harness.demo import DemoSettings

    result = demo(**{f.name: getattr(args, f.name) for f in dataclasses.fields(DemoSettings)})
    print(result.markdown)
    return 0 if result.failed == 0 else 1


def register(sub: Any) -> None:
    """Add ``whisperbench demo`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("demo", help="offline default evaluation: local implementations on the bundled data")
    p.add_argument("--model", default="tiny.en", help="model of every row (default: %(default)s)")
    p.add_argument("--runs-dir", default="runs/demo", help="folder holding the runs (default: %(default)s)")
    p.add_argument(
        "--out",
        help="leaderboard file (default: leaderboard.md in --runs-dir; the repository's "
        "reports/leaderboard.md is a published copy, rewritten only when named here)",
    )
    p.add_argument("--threads", type=whole, help="threads per implementation (default: all cores)")
    p.add_argument("--limit", type=whole, help="only the first N examples of each dataset")
    p.add_argument("--short-only", action="store_true", help="skip the long-form dataset")
    p.add_argument(
        "--implementations",
        metavar="LABEL,...",
        help="only these rows, by label (e.g. openai-whisper,faster-whisper-int8; the reference is always "
        "run); default: every installed implementation",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="also run implementations that are slow on this platform (MLX off Apple silicon)",
    )
    p.add_argument(
        "--reference-endpoint",
        metavar="URL",
        help="use an OpenAI-compatible endpoint as the reference (key from $OPENAI_API_KEY)",
    )
    p.add_argument("--reference-model", default="whisper-1", help="model name sent to --reference-endpoint")
    p.set_defaults(func=command)
