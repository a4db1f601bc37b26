"""``whisperbench perturb``: a robustness set derived from a dataset."""

from __future__ import annotations

from typing import Any

from .common import add_column_args, columns, finite, whole


def command(args) -> int:
    """``whisperbench perturb``: write a robustness set derived from a dataset; prints its manifest."""
    from ..api import perturb

    manifest = perturb(
        args.dataset,
        args.out,
        noise=args.noise,
        snr=args.snr,
        gain=args.gain,
        reverb=args.reverb,
        silence=args.silence,
        nonspeech=args.nonspeech,
        nonspeech_s=args.nonspeech_s,
        clean=not args.no_clean,
        seed=args.seed,
        limit=args.limit,
        columns=columns(args),
    )
    print(manifest)
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench perturb`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser(
        "perturb",
        help="write a robustness set derived from a dataset (noise at SNRs, reverberation, "
        "gain, pauses, non-speech clips); prints its manifest (docs/robustness.md)",
    )
    p.add_argument("--dataset", required=True, help="the source: manifest, folder, bundled name or hf:...")
    p.add_argument(
        "--out",
        default="perturbed",
        help="folder for derived sets, each in perturb-KEY (KEY: the "
        "source's content, the recipe and seed; default: %(default)s)",
    )
    p.add_argument("--noise", metavar="KIND,...", help="additive noise: white, pink, brown, babble (other utterances)")
    p.add_argument("--snr", metavar="DB,...", help="signal-to-noise ratios of --noise in dB, e.g. 20,10,0")
    p.add_argument("--gain", metavar="DB,...", help="gains in dB, e.g. -20,12 (what exceeds full scale is clipped)")
    p.add_argument(
        "--reverb",
        metavar="RT60,...",
        help="room reverberation, target RT60 in seconds, e.g. 0.3,0.8 (pyroomacoustics' room simulator; lengths kept)",
    )
    p.add_argument(
        "--silence",
        metavar="PLACE:S,...",
        help="pauses: lead, trail or insert (mid-speech) with seconds, e.g. lead:5,insert:10",
    )
    p.add_argument(
        "--nonspeech",
        metavar="KIND,...",
        help="non-speech clips with empty transcripts: all, or of "
        "silence, noise_low, noise_loud, hum, tone, clipped_noise",
    )
    p.add_argument("--nonspeech-s", type=finite, default=5.0, help="length of each non-speech clip (default 5 s)")
    p.add_argument("--no-clean", action="store_true", help="leave out the clean copies (PARENT~clean)")
    p.add_argument("--seed", type=whole, default=0, help="seed of every random draw (default 0): same seed, same bytes")
    p.add_argument("--limit", type=whole, help="only the first N examples of the source")
    add_column_args(p)
    p.set_defaults(func=command)
