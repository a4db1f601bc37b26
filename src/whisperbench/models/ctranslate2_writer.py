"""Write a CTranslate2 (faster-whisper) folder with CTranslate2's own transformers converter.

Any other source is first written as a transformers folder (cached), then converted by
``ctranslate2.converters.TransformersConverter``: the library that runs the format also writes it.
The stored precision follows the source (float16 stays float16) unless a variant names another
CTranslate2 quantization (``int8``, ``int8_float32``, ``int16``, ``float32`` …).
"""

from __future__ import annotations

from pathlib import Path

from whisperbench.errors import ModelError
from whisperbench.models.resolve import SourceModel, converted

#: files faster-whisper reads beside model.bin (preprocessor_config.json carries the mel count)
COPIED = ("tokenizer.json", "preprocessor_config.json")
QUANTIZATIONS = ("float32", "float16", "bfloat16", "int8", "int8_float32", "int8_float16", "int16")


def to_ctranslate2(source: SourceModel, out_dir: Path, variant: str) -> None:
    """The converter of its Format: ``source`` as a CTranslate2 folder (``variant``: its quantization)
    into ``out_dir``."""
    from ctranslate2.converters import TransformersConverter

    hf_folder = source.path if source.format == "transformers" else converted(str(source.path), "transformers")
    quantization = variant or ("float16" if source.dtype in ("float16", "bfloat16") else "float32")
    if quantization not in QUANTIZATIONS:
        raise ModelError(f"ctranslate2: unknown variant {quantization!r} (known: {', '.join(QUANTIZATIONS)})")
    copied = [name for name in COPIED if (Path(hf_folder) / name).is_file()]
    if "tokenizer.json" not in copied:
        raise ModelError(f"{hf_folder}: faster-whisper needs tokenizer.json beside the weights")
    TransformersConverter(
        str(hf_folder), copy_files=copied, load_as_float16=quantization != "float32", low_cpu_mem_usage=True
    ).convert(str(out_dir), quantization=quantization, force=True)
